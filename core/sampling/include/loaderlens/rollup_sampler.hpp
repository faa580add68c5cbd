// SPDX-License-Identifier: MIT
// The rollup tier's sampler (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/followed_share.hpp"
#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/tree_stillness.hpp"
#include "loaderlens/types.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

// Rollup tier: /proc/PID/smaps_rollup (PSS and its split, USS, shared, swap), kept open and
// re-read with pread. Measured cheaper than libproc2's procps_pids_select, which re-reads
// /proc/PID/status and /proc/uptime on every call (see bench/).
//
// PSS only when it may have moved: the last readings are kept, and recorded again with their
// age, while the tree stands still (TreeStillness: one move anywhere has every process read, so
// the saving is in quiet phases: idle or waiting workers, a fleet at rest). A sharer outside
// the tree is not seen: `max_age_ms` bounds how stale a reading gets.
//
// PSS of a moving process without walking its data files again: given the followed data files'
// share of each process computed from pagemap in the same run (FollowedShares), a process read
// less than max_age_ms ago gets a composite row, its kernel reading minus the share it had then
// (the rest: anonymous memory, libraries, shared memory) plus the share it has now. The walk of
// the data files' page tables, most of the cost in a data loader, is paid once per max_age_ms;
// the part that moves fastest (pages of the data files faulted in) is fresh at every sample.
// When the rest's resident memory (statm resident minus the share's present pages) moved by
// more than 1 MiB or 5% of the PSS since the reading, or a process joined the tree since (see
// births_), the process is read afresh instead.
class RollupSampler {
  public:
    // `max_age_ms` 0 (the default): read every process at every sample, a full PSS sweep. The
    // recorder's session keeps readings up to 5 s (SessionOptions::pss_max_age_ms).
    explicit RollupSampler(std::int64_t max_age_ms = 0) : max_age_ms_(max_age_ms) {}
    ~RollupSampler();
    RollupSampler(const RollupSampler&) = delete;
    RollupSampler& operator=(const RollupSampler&) = delete;

    // `followed`: the data files' share of each process at this moment (none: no composite).
    void sample(const std::vector<ProcessInfo>& live, std::vector<RollupSample>& out,
                Problems& problems, const FollowedShares* followed = nullptr);
    void forget(const ProcessKey& key);
    // Processes read afresh at the last sample (the others were kept).
    int read_last() const { return read_last_; }
    // Processes given a composite row at the last sample.
    int composite_last() const { return composite_last_; }

  private:
    struct State {
        int rollup_fd = -1;
        bool has_reading = false;
        RollupSample reading;
        std::int64_t read_ms = 0;
        // The followed files' share when the reading was taken (empty: no composite from it).
        std::optional<FollowedShare> share_at_read;
        std::int64_t resident_at_read = -1; // statm pages at the reading's look
        std::int64_t births_at_read = 0;    // births_ when the reading was taken
        RollupSample last_row;              // recorded again while the tree stands still
    };
    static bool rest_stood(const State& state, const FollowedShare& now,
                           std::int64_t resident_pages);
    static RollupSample composite(const State& state, const FollowedShare& now,
                                  std::int64_t age_ms);
    int open_rollup(const ProcessInfo& info, Problems& problems);
    // smaps_rollup afresh; false when there is nothing to record (gone, unreadable).
    bool read_rollup(const ProcessInfo& info, State& state, Problems& problems);

    std::int64_t max_age_ms_;
    // Processes that joined the tree so far. A composite needs none since its reading: a newborn
    // may have mapped the files before the tracker saw it, so the kernel counted it as a sharer
    // at the reading and the computed share did not; once it is seen, the share drops while the
    // kernel's figure does not (measured: Σ PSS 11 and 19 MiB low for the 5 s of
    // --pss-max-age, 2 runs in 30 of the scheduler_views test, 2026-11-26).
    std::int64_t births_ = 0;
    TreeStillness stillness_;
    std::map<ProcessKey, State> states_;
    std::string buffer_;
    int read_last_ = 0, composite_last_ = 0;
};

} // namespace loaderlens
