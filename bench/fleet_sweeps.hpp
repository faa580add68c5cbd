// SPDX-License-Identifier: MIT
// The fleet bench's in-process part: what one full sweep of a fleet costs, per tool, in CPU time.
//
// PSS of every process (issue 12's "CPU per full PSS sweep"): loaderlens's RollupSampler against
// the bare pread of each smaps_rollup (the floor), psutil's memory_full_info() over the same PIDs
// (bench/psutil_sweep.py, its own CPU clock around the sweeps) and the `smem` command selecting the
// tree by name (its CPU from rusage, interpreter start included, as a user pays it; and smem with
// nothing selected, its start-up and scan of /proc, printed so that it can be subtracted).
//
// Per-file figures of every process: the residency tier (ResidencySampler: maps, cachestat,
// PAGEMAP_SCAN, PSS computed from the present-page bitmaps) against the maps tier (MapsSampler:
// every process's smaps), per GiB mapped.
//
// All in interleaved rounds (rounds.hpp), the samplers timed by this thread's CPU clock.
#pragma once

#include "rounds.hpp"
#include "targets.hpp"

#include <string>

namespace loaderlens::bench {

struct SweepOptions {
    std::string python = "/usr/bin/python3";
    std::string psutil_script;
    std::string smem = "smem";
    int rounds = 5;
    int reps = 3; // in-process sweeps per round, and psutil sweeps per python run
};

struct SweepResult {
    int processes = 0;
    double mapped_gib = 0;     // file mapped by the processes, summed over them
    double pmd_mapped_gib = 0; // of which mapped by 2 MiB page-table entries (FilePmdMapped)
    int rounds = 0;
    // CPU µs per sweep of all the processes.
    Stats raw_rollup, rollup, psutil, smem, smem_nothing, maps, residency;
    // Sums over the fleet, read in the same rounds (like for like): PSS by each tool; the file's
    // RSS and PSS by smaps (MapsSampler) and by the residency tier. KiB.
    double rollup_pss_kb = 0, psutil_pss_kb = 0, smem_pss_kb = 0;
    double smaps_file_rss_kb = 0, smaps_file_pss_kb = 0;
    double pagemap_file_rss_kb = 0, pagemap_file_pss_kb = 0;
};

// Checks that the baselines can run (python3 with psutil, the smem command): SetupError in one
// line naming what is missing and the Debian package.
void check_baselines(const SweepOptions& options);

// Measures the sweeps of `tree`'s processes, whose workers map `file` (SetupError when a tool fails
// or the tools disagree on what they read).
SweepResult measure_sweeps(const TargetTree& tree, const std::string& file,
                           const SweepOptions& options);

} // namespace loaderlens::bench
