// SPDX-License-Identifier: MIT
// `loaderlens check`: holds a recording (given, or made here from `-- CMD` or `replay DATASET`)
// against a budget file and/or a baseline recording; one line per rule, JUnit XML for CI, and an
// exit status CI can act on (docs/check.md).
#include "budget_file.hpp"
#include "commands.hpp"
#include "loaderlens/check_report.hpp"
#include "loaderlens/merged_report.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/sibling_tasks.hpp"
#include "output_file.hpp"
#include "output_name.hpp"
#include "replay_command.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>

namespace loaderlens::cli {

namespace {

struct CheckOptions {
    std::string recording;
    std::string budget, baseline, tolerance, junit;
    RecordOptions record;        // check -- CMD
    RecordOptions replay_record; // check replay DATASET
    LoaderFlags flags;
    CLI::App* replay = nullptr;
};

struct Evaluated {
    CheckRun run;
    int failed = 0;
};

std::optional<DiagnosisOptions> diagnosis_options(const std::string& mem_limit,
                                                  const Budget& budget) {
    DiagnosisOptions options;
    options.mem_limit_kb = budget.mem_limit_kb;
    if (!mem_limit.empty()) {
        const auto bytes = parse_size(mem_limit);
        if (!bytes) {
            print_error("--mem-limit " + mem_limit + ": expected a size like 4GiB, 4G or 4096MiB");
            return std::nullopt;
        }
        options.mem_limit_kb = *bytes / 1024; // the command line before the budget file
    }
    return options;
}

// A recording as the rules see it: each part of a merged one on its own (a node's limit is its
// own, and its rows are read one part at a time: one node's rows in memory, not the job's), else
// the whole.
struct Checked {
    std::string part; // empty: not merged
    const ReportData* report = nullptr;
    const RecordingPart* merged_part = nullptr;
    RecordingData rows(const Recording& recording) const {
        if (!merged_part) return recording.read_all();
        return on_part_clock(recording.read_part(merged_part->id), *merged_part);
    }
};

std::vector<Checked> checked_parts(const ReportData& report) {
    if (!report.merged) return {Checked{"", &report, nullptr}};
    std::vector<Checked> out;
    for (const PartReport& p : report.merged->parts)
        out.push_back({p.part.name, &p.report, &p.part});
    return out;
}

// The baseline rules of one part: against the baseline's part of the same name (the same node).
void compare_part(const Checked& c, const RecordingData& data, const Recording& base,
                  const std::vector<Checked>& base_parts, const Budget& budget, double tolerance,
                  CheckOutcome& outcome) {
    auto same = std::find_if(base_parts.begin(), base_parts.end(),
                             [&](const Checked& b) { return b.part == c.part; });
    if (same == base_parts.end()) {
        RuleResult missing{.group = "baseline", .name = "part in the baseline"};
        missing.status = RuleStatus::unavailable;
        missing.measured = "unavailable";
        missing.detail = "the baseline has no part " + (c.part.empty() ? "(it is merged)" : c.part);
        outcome.rules.push_back(std::move(missing));
        return;
    }
    const std::int64_t base_warmup = warmup_of(*same->report, budget, nullptr);
    for (RuleResult& r :
         compare_to_baseline(data, *c.report, outcome.warmup_ms, same->rows(base), *same->report,
                             base_warmup, tolerance, budget.min_change_kb))
        outcome.rules.push_back(std::move(r));
}

// Reads both recordings and evaluates; throws RecordingError.
Evaluated evaluate(const std::string& path, const CheckOptions& o, const Budget& budget,
                   const DiagnosisOptions& options, double tolerance) {
    Evaluated e;
    Recording recording(path);
    // The step's other tasks on the node, as `report` finds them: one margin for both.
    DiagnosisOptions own = options;
    find_sibling_tasks(recording, own);
    const ReportData report = build_report(recording, own);
    e.run.recording = path;
    e.run.budget_file = o.budget;
    e.run.baseline = o.baseline;
    e.run.skip_unavailable = budget.skip_unavailable;
    e.run.duration_ms = report.duration_ms;
    std::optional<Recording> base;
    std::optional<ReportData> base_report;
    std::vector<Checked> base_parts;
    if (!o.baseline.empty()) {
        base.emplace(o.baseline);
        base_report = build_report(*base, options);
        base_parts = checked_parts(*base_report);
    }
    for (const Checked& c : checked_parts(report)) {
        const RecordingData data = c.rows(recording);
        CheckOutcome outcome = check_budget(data, *c.report, budget);
        if (base) compare_part(c, data, *base, base_parts, budget, tolerance, outcome);
        for (RuleResult& r : outcome.rules) {
            if (!c.part.empty()) r.name = c.part + ": " + r.name;
            e.run.outcome.rules.push_back(std::move(r));
        }
        e.run.outcome.warmup_ms = outcome.warmup_ms;
        const std::string note = (c.part.empty() ? "" : c.part + ": ") + outcome.warmup_note;
        e.run.outcome.warmup_note += (e.run.outcome.warmup_note.empty() ? "" : "; ") + note;
    }
    e.failed = e.run.outcome.failed(budget.skip_unavailable);
    return e;
}

std::string command_failure(const RecordResult& result) {
    if (result.killed_by)
        return "was killed by signal " + std::to_string(result.killed_by) + " (" +
               strsignal(result.killed_by) + ")";
    return "exited with status " + std::to_string(result.exit_code);
}

// Everything this check reads or makes that --junit must never replace: the recording, the
// budget file, the baseline (with their SQLite companions), the recording `-- CMD` or `replay`
// will make, the dataset, the trace, and --file's files.
InputFiles inputs_of(const CheckOptions& o, bool command, bool replay) {
    InputFiles inputs;
    for (const std::string* recording : {&o.recording, &o.baseline})
        if (!recording->empty()) inputs.add_recording(*recording);
    if (!o.budget.empty()) inputs.add(o.budget);
    const RecordOptions& recorded = replay ? o.replay_record : o.record;
    if (command || replay) inputs.add_recording(expand_output_name(recorded.output));
    for (const auto* files : {&recorded.residency_files, &recorded.inputs})
        for (const std::string& file : *files)
            inputs.add(file);
    if (replay) {
        inputs.add(o.flags.dataset);
        for (const char* lmdb_file : {"/data.mdb", "/lock.mdb"})
            inputs.add(o.flags.dataset + lmdb_file);
        if (o.flags.trace) inputs.add(*o.flags.trace);
    }
    return inputs;
}

int run_check(CheckOptions& o) {
    // As record -o: `srun -n2 ... check --junit run-%j.%t.xml` leaves one file per task.
    o.junit = expand_output_name(o.junit);
    const bool replay = o.replay && o.replay->parsed();
    const bool command = !o.record.command.empty();
    const int targets = (o.recording.empty() ? 0 : 1) + (command ? 1 : 0) + (replay ? 1 : 0);
    if (targets != 1) {
        print_error(targets == 0
                        ? "check: give a recording, a command after --, or replay DATASET"
                        : "check: give one of a recording, a command after --, or replay DATASET");
        return exit_bad_input;
    }
    if (o.budget.empty() && o.baseline.empty()) {
        print_error("check: give --budget FILE.toml, --baseline RECORDING, or both");
        return exit_bad_input;
    }
    Budget budget;
    if (!o.budget.empty()) {
        try {
            budget = read_budget_file(o.budget);
        } catch (const BudgetFileError& e) {
            print_error(e.what());
            return exit_bad_input;
        }
        if (budget.schedulers.empty() && !budget.min_margin_kb && budget.processes.empty() &&
            budget.files.empty() && budget.growth.empty() && budget.findings.forbidden.empty() &&
            !budget.findings.max_severity && o.baseline.empty()) {
            print_error(o.budget + ": no rules (docs/check.md; resources/budgets/example.toml)");
            return exit_bad_input;
        }
    }
    double tolerance = budget.tolerance.value_or(0.10);
    if (!o.tolerance.empty()) {
        auto share = parse_percent(o.tolerance);
        if (!share) {
            print_error("--tolerance " + o.tolerance + ": expected a percentage like 10%");
            return exit_bad_input;
        }
        tolerance = *share;
    }
    const RecordOptions& recorded = replay ? o.replay_record : o.record;
    const auto options = diagnosis_options(recorded.mem_limit, budget);
    if (!options) return exit_bad_input;
    for (const std::string* file : {&o.recording, &o.baseline})
        if (!file->empty())
            if (auto problem = recording_name_problem(*file)) {
                print_error(*problem);
                return exit_bad_input;
            }
    // The JUnit file is opened before anything runs: a path it cannot take is bad input.
    const InputFiles inputs = inputs_of(o, command, replay);
    std::unique_ptr<OutputFile> junit;
    try {
        if (!o.junit.empty())
            junit = std::make_unique<OutputFile>(o.junit, inputs, false, "--junit " + o.junit);
    } catch (const OutputFileError& e) {
        print_error(e.what());
        return e.exit_code;
    }
    if (!o.baseline.empty()) {
        try { // a damaged baseline is said before the command runs for minutes
            Recording check_baseline(o.baseline);
        } catch (const RecordingError& e) {
            print_error(e.what());
            return exit_bad_input;
        }
    }

    std::string path = o.recording;
    std::optional<std::string> failure;
    if (command || replay) {
        std::optional<std::string> closed;
        RecordResult result;
        if (replay) {
            ReplayRecording r = record_replay(o.flags, o.replay_record);
            if (r.early_exit) return *r.early_exit;
            closed = r.output;
            result = r.result;
        } else {
            RecordHooks hooks;
            hooks.after = [&closed](const std::string& output, bool) { closed = output; };
            result = run_record(o.record, hooks);
        }
        if (!closed) return result.exit_code ? result.exit_code : exit_internal; // said already
        path = *closed;
        if (result.exit_code != 0 || result.killed_by) failure = command_failure(result);
    }

    Evaluated e;
    try {
        e = evaluate(path, o, budget, *options, tolerance);
    } catch (const RecordingError& error) {
        print_error(error.what());
        return exit_bad_input;
    }
    e.run.command_failure = failure;
    std::cout << render_check_text(e.run);
    std::cout.flush();
    if (junit) {
        // The recording made here went to the next free name if its own was taken: not the
        // JUnit file's name either.
        InputFiles made;
        made.add_recording(path);
        if (auto input = made.input_at(o.junit)) {
            print_error("--junit " + o.junit + ": is the recording " + path +
                        " this check made: not written over");
            return exit_bad_input;
        }
        junit->stream() << render_junit(e.run);
        if (auto problem = junit->commit()) {
            print_error(*problem);
            return exit_internal;
        }
    }
    if (failure) return exit_command_failed;
    return e.failed ? exit_budget_failed : exit_ok;
}

} // namespace

Runner add_check(CLI::App& app) {
    auto o = std::make_shared<CheckOptions>();
    o->record.output = default_output_pattern("check");
    o->replay_record.output = default_output_pattern("check");
    CLI::App* sub = app.add_subcommand(
        "check", "Hold a recording (or a command, or a replay, recorded here) to memory budgets");
    sub->add_option("recording", o->recording, "A recording to check");
    sub->add_option("command", o->record.command, "A command to record and check (after --)");
    sub->add_option("--budget", o->budget, "Budget file (TOML; docs/check.md)");
    sub->add_option("--baseline", o->baseline,
                    "A recording whose figures this one must not exceed");
    sub->add_option(
        "--tolerance", o->tolerance,
        "How much a figure may grow over the baseline's (default 10%, or the budget's)");
    sub->add_option("--junit", o->junit,
                    "Also write the results as JUnit XML to this file (%j %s %t %a %N %p %% "
                    "expanded as in -o)");
    add_recording_options(sub, o->record);
    o->replay =
        sub->add_subcommand("replay", "Replay the reference loader, then check its recording");
    add_loader_flags(o->replay, o->flags);
    add_recording_options(o->replay, o->replay_record);
    o->replay->fallthrough();
    sub->footer("Exit status: 0 every rule passed, 3 a rule failed, 4 the recorded command failed "
                "(the rules are still checked and written), 2 bad input, 1 output not written.");
    return [o] { return run_check(*o); };
}

} // namespace loaderlens::cli
