// SPDX-License-Identifier: MIT
// `loaderlens advise`: what a short replay of one loader setting measured, counted the way a
// scheduler counts it and held against a memory limit; and the recommendation over a grid of such
// settings: the fastest that fits. Plain values and pure functions: the CLI runs the replays, the
// output layer renders the table (docs/advise.md).
#pragma once

#include "loaderlens/report.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loaderlens {

// How the cluster counts a job's memory against its limit (kernel-notes.md, docs/figures.md).
enum class Accounting {
    slurm_linux, // jobacct_gather/linux: Σ RSS (the default of SLURM)
    usepss,      // jobacct_gather/linux with UsePss: Σ PSS
    cgroup,      // task/cgroup: everything charged to the job's cgroup, page cache included
    k8s,         // the kubelet: cgroup usage - inactive_file (the working set)
};
inline constexpr Accounting all_accountings[] = {Accounting::slurm_linux, Accounting::usepss,
                                                 Accounting::cgroup, Accounting::k8s};
std::optional<Accounting> parse_accounting(std::string_view name); // linux, usepss, cgroup, k8s
const char* to_string(Accounting accounting);                      // as parsed
const char* view_key(Accounting accounting); // the diagnosis's SchedulerView::key

// What the user's job has besides the loader: the replay's main process and workers are small C++
// processes, a training script's are not (the model, CUDA, an interpreter in every worker).
struct AdviseAssumptions {
    std::int64_t reserve_kb = 0;    // added once to every setting's figure
    std::int64_t per_worker_kb = 0; // added once per worker
    int train_epochs = 0;           // epochs to extrapolate growth to (0: the replayed ones)
    std::int64_t dataset_kb = 0;    // the dataset file: how far file-backed growth can go
};

// One accounting's figure of one replay.
struct AccountedPeak {
    Kib measured;            // the scheduler view's peak (the recorder's own share left out)
    std::string unavailable; // why there is no figure
    std::string note;        // how it was taken, when not the plain peak
    // Growth across epochs (persistent workers, three epochs or more): the mean rise per epoch
    // after the first (whose rise is warm-up), and the peak extrapolated linearly to
    // AdviseAssumptions::train_epochs (an estimate: say so).
    std::optional<std::int64_t> growth_per_epoch_kb;
    Kib extrapolated;
    bool extrapolation_capped = false; // held at "every worker maps the whole dataset"
    // What the job would be counted: extrapolated (or measured) + the assumptions.
    Kib counted;
};

// What one replay measured.
struct AdviseMeasure {
    bool ok = false;
    std::string problem; // why not ok: the loader failed, nothing recorded
    int workers = 0;
    int epochs = 0;
    double samples_per_second = 0; // every epoch's samples over their seconds
    double mib_per_second = 0;
    std::int64_t samples = 0;
    double seconds = 0;
    std::vector<std::pair<Accounting, AccountedPeak>> peaks; // all four
    std::vector<std::string> finding_kinds;                  // most severe first
    std::vector<std::string> finding_titles;
    const AccountedPeak* peak(Accounting accounting) const;
};

// Measures a replay's report: the four accountings' peaks (and growth when `persistent` and it
// ran three epochs or more), throughput from the loader's own counters, the findings.
AdviseMeasure measure_replay(const ReportData& report, bool persistent,
                             const AdviseAssumptions& assumptions);

// One setting of the grid: the loader flags it sets (as `--flag value`, in grid order).
struct AdviseSetting {
    std::vector<std::pair<std::string, std::string>> flags;
    std::string label() const;                        // "workers=4 read=pread persistent=yes"
    std::string value(const std::string& flag) const; // "" if not set
};

struct AdviseRow {
    AdviseSetting setting;
    bool ran = false;
    std::string not_run; // why it did not run: the time budget, an interrupt
    AdviseMeasure measure;
    std::string recording; // kept with --keep
    // Judged against the limit under the chosen accounting (recommend() fills these in).
    std::optional<bool> fits;
    Kib margin_kb;
    std::string verdict; // "recommended", "over the limit by 1.2 GiB", "fits, 40% slower"...
};

struct Recommendation {
    std::optional<std::size_t> row; // the fastest row that fits
    std::string reason;             // why that one, or why none
};

// Judges every row (fits, margin, verdict) and picks the fastest that fits under `accounting`.
// A row whose figure is unavailable cannot be judged: it is never recommended.
Recommendation recommend(std::vector<AdviseRow>& rows, Accounting accounting,
                         std::int64_t limit_kb);

} // namespace loaderlens
