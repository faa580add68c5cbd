// SPDX-License-Identifier: MIT
// `loaderlens report` and `loaderlens export`: read a recording (finished or live) and print it.
// Standard output is checked by main(): a full disk or a closed pipe is exit 1.
#include "commands.hpp"
#include "loaderlens/export.hpp"
#include "loaderlens/merged_report.hpp"
#include "loaderlens/report.hpp"
#include "output_checks.hpp"
#include "output_file.hpp"

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

// Why `--part NAME` cannot pick a part of `report`'s recording: not a merged one, or no such
// part (the names it has). A merged recording without --part is its job report: no problem.
std::optional<std::string> part_problem(const std::string& file, const std::string& part,
                                        const ReportData& report) {
    if (part.empty()) return std::nullopt;
    if (!report.merged)
        return file + ": not a merged recording: --part " + part +
               " names a part of one (loaderlens merge)";
    if (report.merged->part(part)) return std::nullopt;
    std::string names;
    for (const PartReport& p : report.merged->parts) {
        if (names.size() > 200) {
            names += ", ...";
            break;
        }
        names += (names.empty() ? "" : ", ") + p.part.name;
    }
    return file + ": no part named " + part + " (its parts: " + names + ")";
}

} // namespace

Runner add_report(CLI::App& app) {
    struct Options {
        std::string file;
        bool json = false;
        std::string mem_limit, part;
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub =
        app.add_subcommand("report", "Summarize a recording: processes, mapped files, tree totals");
    sub->add_option("file", o->file, "Recording file")->required();
    sub->add_flag("--json", o->json, "Machine-readable JSON instead of text");
    sub->add_option("--mem-limit", o->mem_limit,
                    "The memory limit to hold the scheduler views against (e.g. 4GiB); before the "
                    "one recorded, SLURM's --mem and the cgroup's limit");
    sub->add_option("--part", o->part,
                    "Of a merged recording (loaderlens merge): the full report of this part alone "
                    "(its name from the merged report: the node, e.g. node1 or node1.step0)");
    return [o] {
        DiagnosisOptions options;
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
            ReportData data = build_report(recording, options);
            const ReportData* shown = &data;
            if (auto problem = part_problem(o->file, o->part, data)) {
                print_error(*problem);
                return exit_bad_input;
            }
            if (!o->part.empty()) shown = &data.merged->part(o->part)->report;
            std::cout << (o->json ? render_report_json(*shown) : render_report_text(*shown));
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
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub = app.add_subcommand("export", "Export a recording's time series as CSV or JSON");
    sub->add_option("file", o->file, "Recording file")->required();
    sub->add_option("--format", o->format,
                    "csv, json, or residency-csv (page-cache and present-page buckets, a row per "
                    "bucket and sample)")
        ->check(CLI::IsMember({"csv", "json", "residency-csv"}))
        ->capture_default_str();
    sub->add_option("-o,--output", o->output,
                    "Output file (default: standard output); written whole or not at all, never "
                    "over the recording read");
    return [o] {
        InputFiles inputs;
        inputs.add_recording(o->file);
        if (auto problem = recording_name_problem(o->file)) {
            print_error(*problem);
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
            if (!o->output.empty()) file.emplace(o->output);
            std::ostream& out = file ? file->stream() : std::cout;
            if (o->format == "json")
                export_json(recording, out);
            else if (o->format == "residency-csv")
                export_residency_csv(recording, out);
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
