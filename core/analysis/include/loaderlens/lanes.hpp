// SPDX-License-Identifier: MIT
// Who held what, over time: one lane per worker slot holding its generations (PyTorch re-forks
// workers each epoch unless persistent_workers; the n-th live worker keeps slot n), the main
// process, helpers; and what frames the plots: markers, spans where a figure was unavailable,
// and the interval each tier actually ran at.
#pragma once

#include "loaderlens/recording_data.hpp"

#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

struct LaneProcess {
    std::int64_t process_id = 0;
    pid_t pid = 0;
    int generation = -1; // workers; -1 for main and helpers
    std::int64_t birth_ms = 0;
    std::optional<std::int64_t> exit_ms; // empty: alive at the recording's end
    std::optional<int> exit_status;      // wait status, when known
};

struct WorkerLane {
    int slot = 0;
    int part = 0; // a merged recording's part (node): two nodes' slot 0 are two lanes
    std::vector<LaneProcess> generations; // in generation order
};

// A figure of a tier unavailable for a process, from when the recorder first noted it until the
// process exited (or the recording ended: no end).
struct UnavailableSpan {
    std::int64_t process_id = 0;
    std::string tier, reason;
    std::int64_t from_ms = 0;
    std::optional<std::int64_t> to_ms;
};

// A tier's interval from `from_ms` on (the adaptive interval stretches under its CPU budget).
struct TierInterval {
    std::string tier;
    std::int64_t from_ms = 0, interval_ms = 0;
    double cpu_us_per_run = 0;
};

struct Lanes {
    std::vector<LaneProcess> mains;
    std::vector<WorkerLane> workers; // in (part, slot) order
    std::vector<LaneProcess> helpers;
    std::vector<Marker> markers;
    std::vector<UnavailableSpan> unavailable;
    std::vector<TierInterval> tiers; // in time order
};

Lanes lanes(const RecordingData& data);

} // namespace loaderlens
