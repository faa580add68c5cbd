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

struct RecorderRun {
    std::string name;
    int processes = 0;        // in the tree we made
    std::size_t recorded = 0; // processes the recording knows
    double wall_s = 0, cpu_s = 0;
    double steady_percent = 0; // CPU% after the warm-up (start-up excluded)
    Kib peak_rss, peak_pss;
    std::vector<TierSummary> tiers;       // from tier_stats
    std::map<std::string, TierGaps> gaps; // "fast", "rollup", "maps", "residency"
    double percent() const { return wall_s > 0 ? 100.0 * cpu_s / wall_s : 0; }
};

// Records `tree` for `seconds` into a file of `scratch`; SetupError when the recorder fails.
RecorderRun record_tree(const std::string& cli, int seconds, Scratch& scratch,
                        const std::string& name, const TargetTree& tree);

} // namespace loaderlens::bench
