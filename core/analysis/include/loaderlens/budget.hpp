// SPDX-License-Identifier: MIT
// The CI memory check: budgets a recording must stay within (read from a TOML file by the CLI)
// and the comparison with a baseline recording, each evaluated into one result per rule. Plain
// values; check_budget() and compare_to_baseline() are pure functions over a recording's data and
// its report. Rules and their figures: docs/check.md.
#pragma once

#include "loaderlens/report.hpp"
#include "loaderlens/series.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

// Where a rule was written (a budget file's line), for messages and JUnit's `file` attribute.
struct RuleOrigin {
    std::string file;
    int line = 0;
};

// A scheduler view's peak (after the warm-up) must not exceed max_kb.
struct SchedulerBudget {
    std::string view; // a SchedulerView key: slurm_linux, slurm_usepss, ...
    std::int64_t max_kb = 0;
    RuleOrigin origin;
};

struct FigureLimit {
    Figure figure = Figure::rss; // a per-process figure (fast or rollup tier)
    std::int64_t max_kb = 0;
    RuleOrigin origin;
};

// Figures of processes by role: main, each worker slot (the highest slot is what is held
// against the limit), one slot, or the workers' sum.
struct ProcessBudget {
    Role role = Role::worker;
    std::optional<int> slot; // workers: one slot only
    bool sum = false;        // workers: Σ over the workers at each tick instead of per slot
    std::vector<FigureLimit> limits;
    RuleOrigin origin;
};

// Memory of mapped files whose path matches a glob (fnmatch; a pattern without '/' matches the
// file name): Σ over the tree at a maps tick, one process's most, and the page cache.
struct FileBudget {
    std::string pattern;
    std::optional<std::int64_t> rss_kb, pss_kb, process_rss_kb, cached_kb;
    RuleOrigin origin;
};

// Growth per epoch of a figure of every worker slot (or main), after the warm-up epochs.
struct GrowthBudget {
    std::string figure;       // a GrowthFigure name: rss, pss, uss, private_dirty, rss_file
    std::optional<Role> role; // empty: workers and main
    std::int64_t max_per_epoch_kb = 0;
    RuleOrigin origin;
};

struct FindingBudget {
    std::vector<std::pair<std::string, RuleOrigin>> forbidden; // finding kinds
    std::optional<Severity> max_severity;                      // fail on anything more severe
    RuleOrigin severity_origin;
};

struct Budget {
    std::string path;
    std::int64_t warmup_ms = 0;
    int warmup_epochs = 0;
    // A rule whose figure is unavailable (a PSS the kernel did not give, no epochs for a growth
    // rule) fails unless the budget says to skip it: a check that cannot measure must not pass.
    bool skip_unavailable = false;
    Kib mem_limit_kb; // the limit the margins are held against (before the recorded one)
    std::vector<SchedulerBudget> schedulers;
    std::optional<std::int64_t> min_margin_kb;
    RuleOrigin min_margin_origin;
    std::vector<ProcessBudget> processes;
    std::vector<FileBudget> files;
    std::vector<GrowthBudget> growth;
    FindingBudget findings;
    // Baseline comparison (--baseline): a figure fails when it grew by more than `tolerance`
    // of the baseline's and by more than min_change_kb (page-level noise on small figures).
    std::optional<double> tolerance;
    std::int64_t min_change_kb = 4096;
};

enum class RuleStatus { pass, fail, unavailable };
const char* to_string(RuleStatus status);

struct RuleResult {
    std::string group; // schedulers, process, file, growth, findings, baseline
    std::string name;  // "slurm_linux peak", "worker rss", "no copy_on_read"
    RuleStatus status = RuleStatus::pass;
    Kib measured_kb; // empty for rules that are not a size (findings)
    std::optional<std::int64_t> limit_kb;
    std::string measured, limit; // as printed: "2.10 GiB", "<= 6.00 GiB"
    std::string where;           // "worker 3 (pid 1234)", a file, the findings that broke it
    std::optional<std::int64_t> at_ms;
    std::string detail; // why it is unavailable, or what else a reader needs
    RuleOrigin origin;
};

struct CheckOutcome {
    std::vector<RuleResult> rules;
    std::int64_t warmup_ms = 0;
    std::string warmup_note; // how the warm-up was found ("2 epochs: until 12.4 s")
    int failed(bool skip_unavailable) const;
};

// Finding kinds the diagnosis produces (docs/findings.md): a budget naming another is bad input.
const std::vector<std::string>& known_finding_kinds();

// Evaluates every rule of `budget` on a recording's data and its report (the report built with
// the budget's mem_limit_kb).
CheckOutcome check_budget(const RecordingData& data, const ReportData& report,
                          const Budget& budget);

// One "baseline" rule per figure both recordings have: each scheduler view's peak, the tree's
// Σ RSS/PSS/USS, main's and the highest worker slot's RSS/PSS/USS/Private_Dirty, each mapped
// file's Σ RSS and Σ PSS. Peaks after each recording's own warm-up.
std::vector<RuleResult>
compare_to_baseline(const RecordingData& data, const ReportData& report, std::int64_t warmup_ms,
                    const RecordingData& baseline_data, const ReportData& baseline,
                    std::int64_t baseline_warmup_ms, double tolerance, std::int64_t min_change_kb);

// The warm-up of a recording under `budget`: its seconds, or the start of the first epoch after
// the warm-up epochs (with a note saying which).
std::int64_t warmup_of(const ReportData& report, const Budget& budget, std::string* note);

} // namespace loaderlens
