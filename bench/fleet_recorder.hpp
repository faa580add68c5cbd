// SPDX-License-Identifier: MIT
// The fleet bench's recorder part: `loaderlens record` (the CLI of this build, default intervals
// and 5% budget) attached with --pid to a target tree for a few seconds, as a user runs it. Its
// CPU is read from /proc/PID/stat (utime + stime, all threads) just before it is stopped with
// SIGINT: what a user or a scheduler would see it cost.
//
// A low CPU% alone could hide a recorder that samples rarely (the budget stretches the tiers), so
// the recording is read back: the effective intervals the recorder chose (tier_stats), and for
// every process the intervals between its own samples in each tier.
#pragma once

#include "loaderlens/report.hpp"
#include "targets.hpp"

#include <map>
#include <string>
#include <vector>

namespace loaderlens::bench {

// One tier's samples per process over the steady window (start-up and the final sample at stop
// left out).
struct TierGaps {
    int processes = 0;         // processes with samples of this tier in the recording
    int fewest_samples = 0;    // the fewest any of them had in the window
    double worst_mean_ms = 0;  // the largest over processes of the window / its sample count
    double longest_gap_ms = 0; // the longest a process went without a sample (window edges too)
};

// PSS against the kernel at stopped moments: the bench stops the tree (SIGSTOP to its group),
// reads every process's smaps_rollup itself, and compares the recorder's rollup tick taken while
// the tree stood stopped (its rows then are what the recorder says at that moment).
struct PssCheck {
    int moments = 0;                        // stopped windows
    int matched = 0;                        // of which with a recorded rollup tick inside
    double worst_sum = 0, mean_sum = 0;     // |Σ recorded - Σ fresh| / Σ fresh
    double worst_process = 0;               // the largest |recorded - fresh| / fresh of one process
    double mean_age_ms = 0, max_age_ms = 0; // age of the recorded PSS rows after warm-up
    int fresh_rows = 0, composite_rows = 0, kept_rows = 0;
};

struct RecorderRun {
    std::string name;
    int processes = 0;        // in the tree we made
    std::size_t recorded = 0; // processes the recording knows
    double wall_s = 0, cpu_s = 0;
    double steady_percent = 0; // CPU% after the warm-up (start-up excluded)
    Kib peak_rss, peak_pss;
    std::vector<TierSummary> tiers;       // from tier_stats
    std::map<std::string, TierGaps> gaps; // "fast", "rollup", "maps", "residency"
    PssCheck pss;
    double percent() const { return wall_s > 0 ? 100.0 * cpu_s / wall_s : 0; }
};

// Records `tree` for `seconds` into a file of `scratch`; SetupError when the recorder fails.
// `check_pss`: every 3 s after warm-up, stop the tree for 1.5 s (PssCheck).
RecorderRun record_tree(const std::string& cli, int seconds, Scratch& scratch,
                        const std::string& name, const TargetTree& tree, bool check_pss = false);

} // namespace loaderlens::bench
