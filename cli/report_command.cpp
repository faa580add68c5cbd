// SPDX-License-Identifier: MIT
// `loaderlens report` and `loaderlens export`: read a recording (finished or live) and print it.
// Standard output is checked by main(): a full disk or a closed pipe is exit 1.
#include "commands.hpp"
#include "loaderlens/export.hpp"
#include "loaderlens/merged_report.hpp"
#include "loaderlens/openmetrics.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/sibling_tasks.hpp"
#include "output_checks.hpp"
#include "output_file.hpp"
#include "output_name.hpp"
#include "terminal_layout.hpp"

#include <iostream>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

// Why standard output must not take the output (it appends to the recording read: `report
// run.db >> run.db`), or nothing.
std::optional<std::string> stdout_problem(const InputFiles& inputs) {
    if (auto input = inputs.input_at(STDOUT_FILENO))
        return "standard output is " + *input + ", the recording read: not written over";
    return std::nullopt;
}

// The report `report` prints: the recording's, or with --part one part's of a merged one (read
// alone). Throws RecordingError; a --part that names no part is said in `problem`.
std::optional<ReportData> report_of(const Recording& recording, const std::string& part,
                                    const DiagnosisOptions& options, std::string& problem) {
    if (part.empty()) return build_report(recording, options);
    const std::vector<RecordingPart> parts = recording.parts();
    if (parts.empty()) {
        problem = recording.path() + ": not a merged recording: --part " + part +
                  " names a part of one (loaderlens merge)";
        return std::nullopt;
    }
    if (auto report = build_part_report(recording, part, options)) return report;
    std::string names;
    for (const RecordingPart& p : parts) {
        if (names.size() > 200) {
            names += ", ...";
            break;
        }
        names += (names.empty() ? "" : ", ") + p.name;
    }
    problem = recording.path() + ": no part named " + part + " (its parts: " + names + ")";
    return std::nullopt;
}

} // namespace

Runner add_report(CLI::App& app) {
    struct Options {
        std::string file;
        bool json = false;
        std::string mem_limit, part, accounting;
        LayoutOptions layout;
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub = app.add_subcommand(
        "report", "Explain a recording: the verdict, what each scheduler counts and "
                  "who holds it, growth, processes, files");
    sub->add_option("file", o->file, "Recording file")->required();
    sub->add_flag("--json", o->json, "Machine-readable JSON instead of text");
    sub->add_option("--mem-limit", o->mem_limit,
                    "The memory limit to hold the scheduler views against (e.g. 4GiB); before the "
                    "one recorded, SLURM's --mem and the cgroup's limit");
    sub->add_option("--part", o->part,
                    "Of a merged recording (loaderlens merge): the full report of this part alone "
                    "(its name from the merged report: the node, e.g. node1 or node1.step0)");
    sub->add_option("--accounting", o->accounting,
                    std::string("What the site counts and enforces, before the configuration "
                                "recorded in the job: ") +
                        accounting_names() + " (docs/slurm.md)");
    add_layout_options(sub, o->layout);
    return [o] {
        DiagnosisOptions options;
        if (!o->accounting.empty()) {
            options.accounting = accounting_view_key(o->accounting);
            if (!options.accounting) {
                print_error("--accounting " + o->accounting + ": expected " + accounting_names());
                return exit_bad_input;
            }
        }
        if (!o->mem_limit.empty()) {
            const auto bytes = parse_size(o->mem_limit);
            if (!bytes) {
                print_error("--mem-limit " + o->mem_limit +
                            ": expected a size like 4GiB, 4G or 4096MiB");
                return exit_bad_input;
            }
            options.mem_limit_kb = *bytes / 1024;
        }
        InputFiles inputs;
        inputs.add_recording(o->file);
        if (auto problem = recording_name_problem(o->file)) {
            print_error(*problem);
            return exit_bad_input;
        }
        if (auto problem = stdout_problem(inputs)) {
            print_error(*problem);
            return exit_bad_input;
        }
        try {
            Recording recording(o->file);
            if (o->part.empty()) find_sibling_tasks(recording, options);
            std::string problem;
            const auto report = report_of(recording, o->part, options, problem);
            if (!report) {
                print_error(problem);
                return exit_bad_input;
            }
            std::cout << (o->json ? render_report_json(*report)
                                  : render_report_text(*report, terminal_layout(o->layout)));
            return exit_ok;
        } catch (const RecordingError& e) {
            print_error(e.what());
            return exit_bad_input;
        }
    };
}

Runner add_export(CLI::App& app) {
    struct Options {
        std::string file, format = "csv", output;
        bool timestamps = false;
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub = app.add_subcommand(
        "export", "Export a recording's time series as CSV, JSON or OpenMetrics");
    sub->add_option("file", o->file, "Recording file")->required();
    sub->add_option("--format", o->format,
                    "csv, json, residency-csv (page-cache and present-page buckets, a row per "
                    "bucket and sample), or openmetrics (each series' latest value; "
                    "docs/metrics.md)")
        ->check(CLI::IsMember({"csv", "json", "residency-csv", "openmetrics"}))
        ->capture_default_str();
    sub->add_flag("--timestamps", o->timestamps,
                  "openmetrics: every tick as a sample with its time, for backfilling with "
                  "promtool tsdb create-blocks-from openmetrics");
    sub->add_option("-o,--output", o->output,
                    "Output file (default: standard output; %j %s %t %a %N %p %% expanded as in "
                    "record -o); written whole or not at all, never over the recording read");
    return [o] {
        o->output = expand_output_name(o->output); // as record -o: one file per task under srun
        InputFiles inputs;
        inputs.add_recording(o->file);
        if (auto problem = recording_name_problem(o->file)) {
            print_error(*problem);
            return exit_bad_input;
        }
        if (o->timestamps && o->format != "openmetrics") {
            print_error("--timestamps: only with --format openmetrics (not " + o->format + ")");
            return exit_bad_input;
        }
        if (!o->output.empty()) {
            std::optional<std::string> problem = output_name_problem("-o", o->output);
            if (!problem)
                if (auto input = inputs.input_at(o->output))
                    problem = "-o " + o->output + ": is " +
                              (*input == o->file ? "the recording" : "the recording's " + *input) +
                              " read by this export: not written over";
            if (problem) {
                print_error(*problem);
                return exit_bad_input;
            }
        } else if (auto problem = stdout_problem(inputs)) {
            print_error(*problem);
            return exit_bad_input;
        }
        try {
            Recording recording(o->file);
            std::optional<OutputFile> file;
            if (!o->output.empty()) file.emplace(o->output, inputs, true);
            std::ostream& out = file ? file->stream() : std::cout;
            if (o->format == "json")
                export_json(recording, out);
            else if (o->format == "residency-csv")
                export_residency_csv(recording, out);
            else if (o->format == "openmetrics")
                export_openmetrics(recording, out, {.timestamps = o->timestamps});
            else
                export_csv(recording, out);
            if (file) {
                if (auto problem = file->commit()) {
                    print_error(*problem);
                    return exit_internal;
                }
            }
            return exit_ok;
        } catch (const RecordingError& e) {
            print_error(e.what());
            return exit_bad_input;
        } catch (const OutputFileError& e) {
            print_error(e.what());
            return e.exit_code;
        }
    };
}

} // namespace loaderlens::cli
