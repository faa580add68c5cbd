// SPDX-License-Identifier: MIT
// The rollup tier's sampler (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/followed_share.hpp"
#include "loaderlens/outside_sharers.hpp"
#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/tree_stillness.hpp"
#include "loaderlens/types.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

// Rollup tier: /proc/PID/smaps_rollup (PSS and its split, USS, shared, swap), kept open and
// re-read with pread. Measured cheaper than libproc2's procps_pids_select, which re-reads
// /proc/PID/status and /proc/uptime on every call (see bench/).
//
// PSS only when it may have moved. A process's PSS moves with its own memory, but also with
// every process it shares pages with: a sharer born (fork: main's anonymous memory now shared)
// or gone, a copy-on-write break in any of them (the page leaves the sharing, the others' shares
// of it rise although their own statm did not move), pages of a shared file faulted in or
// dropped. So a kept or composite reading is used only while nothing in the tree moved since it
// was taken except what the composite computes (the followed data files' present pages):
//  - no process was born into the tree or left it;
//  - no process moved otherwise, beyond a slack: between two looks (TreeStillness: statm and
//    the fault count) a process's faults beyond one per page its followed files grew by, and
//    its resident memory's move beyond theirs, are summed over the tree since the reading;
//    past max(256 KiB, 0.5% of the tree's Σ PSS) the reading is stale and read afresh. An
//    anonymous page allocated, written for the first time or copied on write, a library page
//    faulted in: each counts. The tree counts as one family of sharers (what a worker copies
//    moves main's PSS and its siblings'), which costs reads where a tree holds unrelated
//    programs, never accuracy. A KiB of movement moves Σ PSS by at most a KiB (a copy-on-write
//    break adds its page; a page mapped by one more process only moves the shares), so Σ PSS,
//    and each process's PSS, stays within 0.5% of Σ PSS of a fresh sweep.
// While the tree stands still the last rows are recorded again with their age. A sharer outside
// the tree is not seen by these looks, so every `max_age_ms` the tier looks outside: the files the
// tree maps (its maps) and how many processes outside it map each (every process's maps,
// outside_sharers.hpp). A change in that count moves the tree's Σ share of a file's pages from
// k/(k+m) to k/(k+m'): bounded by the bytes of the file the tree maps, it is added to the drift
// above. Outside mappers that stay can still fault pages in or drop them; where a file has 1-3 of
// them (another job's workers on the same dataset), what they could move (covered bytes x m/(k+m))
// is summed, and past the slack a reading is kept no longer than `max_age_ms`. Files mapped by 4 or
// more outside processes are the system's libraries: their pages are present in most of those
// processes already, and what their churn moves is measured, not bounded (docs/figures.md).
// Otherwise a reading is kept up to `safety_age_ms`: a still tree is walked once a minute, not
// every 5 s.
//
// A process's new anonymous memory (statm's resident - shared, RssAnon, up by X pages with at
// most X faults, none of them a major fault the data files do not explain) is its own private
// pages: its PSS rises by X and nobody else's moves. A
// copy-on-write break leaves RssAnon where it was and counts as a fault; a swap-in is a major
// fault. So that growth is not the tree's movement: the others keep their rows, and the process
// alone is read afresh (its USS needs it: a composite does not compute Private_Clean).
//
// PSS of a moving process without walking its data files again: given the followed data files'
// share of each process computed from pagemap in the same run (FollowedShares), a process read
// less than max_age_ms ago, in a tree where only those files' pages moved since, gets a
// composite row: its kernel reading minus the share it had then (the rest: anonymous memory,
// libraries, shared memory) plus the share it has now. The walk of the data files' page tables,
// most of the cost in a data loader, is then paid once per max_age_ms while only data pages
// are faulted in. Measured against a fresh smaps_rollup sum at 20 stopped moments of a real
// PyTorch DataLoader: tests/test_pss_moments.cpp, docs/benchmarks-sampling.md.
class RollupSampler {
  public:
    // `max_age_ms` 0 (the default): read every process at every sample, a full PSS sweep. The
    // recorder's session keeps readings up to 5 s (SessionOptions::pss_max_age_ms).
    // `safety_age_ms`: how long a reading may be kept while the looks outside find nothing that
    // moved it; at most `max_age_ms` when not above it.
    explicit RollupSampler(std::int64_t max_age_ms = 0, std::int64_t safety_age_ms = 60000)
        : max_age_ms_(max_age_ms), safety_age_ms_(std::max(max_age_ms, safety_age_ms)) {}
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
    // Whether the last look outside lets readings be kept beyond `max_age_ms`.
    bool may_outlive() const { return may_outlive_; }

  private:
    struct State {
        int rollup_fd = -1;
        bool has_reading = false;
        RollupSample reading;
        std::int64_t read_ms = 0;
        // The followed files' share when the reading was taken (empty: no composite from it).
        std::optional<FollowedShare> share_at_read;
        std::int64_t resident_at_read = -1; // statm pages at the reading's look
        std::int64_t anon_at_read = -1;     // statm resident - shared pages then
        std::int64_t drift_at_read = 0;     // drift_kb_ when the reading was taken
        RollupSample last_row;              // recorded again while the tree stands still
        // The followed files' present pages (KiB) at the previous sample; -1: none.
        std::int64_t share_rss_kb = -1;
    };
    // How much of the process's movement between the last two looks (KiB: faults as pages, and
    // resident memory) its followed files' pages do not explain.
    std::int64_t unexplained_kb(const ProcessInfo& info, const State& state,
                                const FollowedShare* share) const;
    // Adds what moved in the tree since the last sample to drift_kb_.
    void note_moves(const std::vector<ProcessInfo>& live, const FollowedShares* followed);
    // The look outside the tree (above): adds what a change of outside mappers moved to drift_kb_.
    void look_outside(const std::vector<ProcessInfo>& live, std::int64_t now_ms);
    // Whether the rest of the process (its anonymous memory included) stood since the reading.
    bool rest_stood(const State& state, const FollowedShare& now, const ProcessKey& key) const;
    static RollupSample composite(const State& state, const FollowedShare& now,
                                  std::int64_t age_ms);
    int open_rollup(const ProcessInfo& info, Problems& problems);
    // smaps_rollup afresh; false when there is nothing to record (gone, unreadable).
    bool read_rollup(const ProcessInfo& info, State& state, Problems& problems);

    std::int64_t max_age_ms_, safety_age_ms_;
    std::int64_t looked_ms_ = 0;
    bool looked_ = false, may_outlive_ = false;
    std::map<FileKey, int> outside_; // outside mappers of each of the tree's files at the last look
    // Movement in the tree that may change some process's PSS beyond what a composite computes,
    // summed sample by sample (KiB; a birth or an exit counts as `everything`): a kept or
    // composite reading stays in use only while less than its slack came since it was taken. A
    // copy-on-write break moves Σ PSS by at most its page, so the error of Σ PSS stays under the
    // largest slack. A newborn, for one, may have mapped the files before the tracker saw it,
    // so the kernel counted it as a sharer at the reading and the computed share did not
    // (measured: Σ PSS 11 and 19 MiB low for the 5 s of --pss-max-age, 2 runs in 30 of the
    // scheduler_views test, 2026-11-26); a worker's copy-on-write raised main's PSS by 74 MiB over
    // 4.9 s of a kept 55 MiB reading under a real torch run (issue 26).
    static constexpr std::int64_t everything = std::int64_t{1} << 40;
    std::int64_t drift_kb_ = 0;
    std::int64_t tree_pss_kb_ = 0; // Σ PSS of the last sample's rows
    TreeStillness stillness_;
    std::map<ProcessKey, State> states_;
    std::string buffer_;
    int read_last_ = 0, composite_last_ = 0;
};

} // namespace loaderlens
