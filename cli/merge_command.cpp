// SPDX-License-Identifier: MIT
// `loaderlens merge FILE... -o OUT`: one recording per node (and per step or task) of a job into
// one, each input a part on one time axis (docs/merge.md). Every input is checked before anything
// is written; a refused one is a line naming it and why, and exit 2. The output is written under
// a temporary name beside OUT and renamed into place: never a partial file, never an input.
#include "commands.hpp"
#include "loaderlens/merge_writer.hpp"
#include "loaderlens/recording.hpp"
#include "merge_inputs.hpp"
#include "output_checks.hpp"
#include "output_file.hpp"
#include "output_name.hpp"

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <sys/stat.h>

namespace loaderlens::cli {

namespace {

struct Options {
    std::vector<std::string> files;
    std::string output;
    bool force = false, quiet = false;
};

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// Why OUT cannot be written: a bad name, an input (or an input's companion), taken without
// --force, or with --force something no recording could have left.
std::optional<std::string> output_problem(const Options& o) {
    if (auto problem = output_name_problem("-o", o.output)) return problem;
    InputFiles inputs;
    for (const std::string& file : o.files)
        inputs.add_recording(file);
    std::vector<std::string> files{o.output};
    for (const std::string& suffix : sqlite_companion_suffixes())
        files.push_back(o.output + suffix);
    for (const std::string& file : files) {
        if (auto input = inputs.input_at(file))
            return "-o " + file + ": is " +
                   (*input == file ? "a recording" : "the recording's " + *input) +
                   " read by this merge: not written over, even with --force";
        if (!exists(file)) continue;
        if (!o.force)
            return file == o.output ? file + ": file exists (use --force to overwrite)"
                                    : file + ": exists beside " + o.output +
                                          " (a recording's companion): use --force to replace";
        if (auto problem = replace_problem(file)) return problem;
    }
    return std::nullopt;
}

int run_merge(const Options& o) {
    const MergeInputs inputs = check_merge_inputs(o.files);
    for (const std::string& refusal : inputs.refusals)
        print_error(refusal);
    if (auto problem = output_problem(o)) {
        print_error(*problem);
        return exit_bad_input;
    }
    if (!inputs.refusals.empty()) return exit_bad_input; // each said in its line above
    for (const std::string& warning : inputs.warnings)
        print_error("warning: " + warning);
    try {
        MergeWriter writer(o.output);
        remove_on_interrupt(writer.temporary_path());
        std::size_t processes = 0;
        for (const RecordingPart& part : inputs.parts) {
            // One input in memory at a time: at 1,000 nodes the inputs together need not fit.
            const RecordingData data = Recording(part.source).read_all();
            processes += data.processes.size();
            writer.add(part, data);
        }
        const RecordingPart& first = inputs.parts.front();
        writer.set_meta("start_unix_ns", std::to_string(first.start_unix_ns));
        if (!first.job.empty()) writer.set_meta("slurm_job_id", first.job);
        writer.set_meta("tool_version", LOADERLENS_VERSION);
        writer.set_meta("merged_unix_ns",
                        std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count()));
        writer.commit(o.force);
        stop_removing_on_interrupt();
        if (!o.quiet) {
            const RecordingPart& last = inputs.parts.back();
            std::cout << fmt::format(
                "merged {} recording{} into {}: {} processes; clocks aligned on their wall-clock "
                "starts, {} started first{}\n",
                inputs.parts.size(), inputs.parts.size() == 1 ? "" : "s", o.output, processes,
                first.name,
                inputs.parts.size() > 1
                    ? fmt::format(", {} {:.3f} s after it (inter-node clock skew is not measured)",
                                  last.name, static_cast<double>(last.offset_ms) / 1000.0)
                    : std::string());
        }
        return exit_ok;
    } catch (const RecordingError& e) { // an input changed or was damaged after its check
        stop_removing_on_interrupt();
        print_error(e.what());
        return exit_bad_input;
    } catch (const MergeError& e) {
        stop_removing_on_interrupt();
        print_error(e.what());
        return e.out_of_space ? exit_internal : exit_bad_input;
    }
}

} // namespace

Runner add_merge(CLI::App& app) {
    auto o = std::make_shared<Options>();
    CLI::App* sub = app.add_subcommand(
        "merge", "Merge one job's recordings (one per node, step or task) into one: each a part, "
                 "on one time axis (docs/merge.md)");
    sub->add_option("files", o->files, "The recordings (e.g. run-1234-*.db)")->required();
    sub->add_option("-o,--output", o->output,
                    "The merged recording (%j %s %t %a %N %p %% expanded as in record -o); written "
                    "whole or not at all, never over an input")
        ->required();
    sub->add_flag("-f,--force", o->force, "Replace an existing output");
    sub->add_flag("-q,--quiet", o->quiet, "Print nothing but errors and warnings");
    return [o] {
        o->output = expand_output_name(o->output); // one merged file per job: merged-%j.db
        for (const std::string& file : o->files)
            if (auto problem = recording_name_problem(file)) {
                print_error(*problem);
                return exit_bad_input;
            }
        return run_merge(*o);
    };
}

} // namespace loaderlens::cli
