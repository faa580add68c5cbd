// SPDX-License-Identifier: MIT
// `loaderlens report` and `loaderlens export`: read a recording (finished or live) and print it.
#include "commands.hpp"
#include "loaderlens/export.hpp"
#include "loaderlens/report.hpp"

#include <fstream>
#include <iostream>

namespace loaderlens::cli {

namespace {
// A full disk or a closed pipe must not pass for a complete report.
int finish_output(std::ostream& out, const std::string& where) {
    out.flush();
    if (out) return exit_ok;
    print_error(where + ": cannot write the output (disk full or pipe closed?)");
    return exit_internal;
}
} // namespace

Runner add_report(CLI::App& app) {
    struct Options {
        std::string file;
        bool json = false;
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub =
        app.add_subcommand("report", "Summarize a recording: processes, mapped files, tree totals");
    sub->add_option("file", o->file, "Recording file")->required();
    sub->add_flag("--json", o->json, "Machine-readable JSON instead of text");
    return [o] {
        try {
            Recording recording(o->file);
            ReportData data = build_report(recording);
            std::cout << (o->json ? render_report_json(data) : render_report_text(data));
            return finish_output(std::cout, "standard output");
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
    sub->add_option("-o,--output", o->output, "Output file (default: standard output)");
    return [o] {
        try {
            Recording recording(o->file);
            std::ofstream file;
            if (!o->output.empty()) {
                file.open(o->output);
                if (!file) {
                    print_error(o->output + ": cannot write");
                    return exit_bad_input;
                }
            }
            std::ostream& out = o->output.empty() ? std::cout : file;
            if (o->format == "json")
                export_json(recording, out);
            else if (o->format == "residency-csv")
                export_residency_csv(recording, out);
            else
                export_csv(recording, out);
            return finish_output(out, o->output.empty() ? "standard output" : o->output);
        } catch (const RecordingError& e) {
            print_error(e.what());
            return exit_bad_input;
        }
    };
}

} // namespace loaderlens::cli
