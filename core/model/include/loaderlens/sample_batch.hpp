// SPDX-License-Identifier: MIT
// What a sampling run hands to the recorder: one timestamp, whatever tiers ran, tree changes.
#pragma once

#include "loaderlens/loader_run.hpp"
#include "loaderlens/residency.hpp"
#include "loaderlens/types.hpp"

#include <optional>
#include <vector>

namespace loaderlens {

struct SampleBatch {
    std::int64_t t_ms = 0;
    std::vector<ProcessInfo> born, exited, renamed;
    std::vector<FastSample> fast;
    std::vector<RollupSample> rollup;
    std::vector<MapsSample> maps;
    ResidencySample residency;
    std::optional<CgroupSample> cgroup;
    std::optional<SystemSample> system;
    std::vector<Marker> markers;
    std::vector<Unavailability> unavailable;
    std::vector<TierStat> tier_stats;
    LoaderRun loader; // the reference loader's events read since the last batch (replay)
};

} // namespace loaderlens
