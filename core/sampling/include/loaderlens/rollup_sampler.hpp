// SPDX-License-Identifier: MIT
// The rollup tier's sampler (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/types.hpp"

#include <map>
#include <string>
#include <vector>

namespace loaderlens {

// Rollup tier: /proc/PID/smaps_rollup (PSS and its split, USS, shared, swap), kept open and
// re-read with pread. Measured cheaper than libproc2's procps_pids_select, which re-reads
// /proc/PID/status and /proc/uptime on every call (see bench/).
//
// PSS only when it may have moved: smaps_rollup walks every page table of the process (~11 µs
// per resident MiB), statm and stat cost a few µs. The last readings are kept, with their age,
// while nothing that moves PSS moved: no process of the tree was born or exited, and none moved
// its statm resident or shared pages or took a page fault (a copy-on-write break is one, and it
// moves the PSS of the process it shared the page with, not only its own). One move anywhere has
// every process read, so the saving is in quiet phases (idle or waiting workers, a fleet at
// rest). A sharer outside the tree is not seen: `max_age_ms` bounds how stale a reading gets.
class RollupSampler {
  public:
    // `max_age_ms` 0 (the default): read every process at every sample, a full PSS sweep. The
    // recorder's session keeps readings up to 5 s (SessionOptions::pss_max_age_ms).
    explicit RollupSampler(std::int64_t max_age_ms = 0) : max_age_ms_(max_age_ms) {}
    ~RollupSampler();
    RollupSampler(const RollupSampler&) = delete;
    RollupSampler& operator=(const RollupSampler&) = delete;

    void sample(const std::vector<ProcessInfo>& live, std::vector<RollupSample>& out,
                Problems& problems);
    void forget(const ProcessKey& key);
    // Processes read afresh at the last sample (the others were kept).
    int read_last() const { return read_last_; }

  private:
    struct Movement {
        std::int64_t resident = -1, shared = -1;
        std::uint64_t faults = 0;
        bool operator==(const Movement&) const = default;
    };
    struct State {
        int rollup_fd = -1, statm_fd = -1, stat_fd = -1;
        Movement now;         // at this sample (resident -1: could not be read)
        Movement at_reading;  // when `reading` was read
        Movement at_last_run; // at the previous sample
        bool has_reading = false;
        RollupSample reading;
        std::int64_t read_ms = 0;
    };
    int open_rollup(const ProcessInfo& info, Problems& problems);
    Movement movement(const ProcessInfo& info, State& state);
    // smaps_rollup afresh; false when there is nothing to record (gone, unreadable).
    bool read_rollup(const ProcessInfo& info, State& state, Problems& problems);

    std::int64_t max_age_ms_;
    std::map<ProcessKey, State> states_;
    std::vector<ProcessKey> last_tree_;
    std::string buffer_;
    int read_last_ = 0;
};

} // namespace loaderlens
