// SPDX-License-Identifier: MIT
// `loaderlens replay`: runs the reference loader under the recorder and prints the report.
// The loader runs as `loaderlens load ...` in a child (a fresh process image, like a training
// script) and tells the recorder its epochs and workers through LOADERLENS_MARKERS and
// LOADERLENS_LOADER_EVENTS.
#include "replay_command.hpp"

#include "loader_options.hpp"
#include "loaderlens/page_cache.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "output_name.hpp"
#include "record_command.hpp"
#include "terminal_layout.hpp"

#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

// LOADERLENS_LOADER_EVENTS: the file beside the recording the loader writes its account to.
constexpr const char* loader_events_suffix = ".loader";

std::string own_executable() {
    std::error_code error;
    auto path = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string("loaderlens") : path.string();
}

} // namespace

ReplayRecording record_replay(const LoaderFlags& flags, RecordOptions& record) {
    ReplayRecording out;
    probes::DatasetLayout layout;
    // Bad input is reported before a recording is created.
    auto options = checked_loader_options(flags, layout);
    if (!options) return out;
    // The dataset file is followed from the start, mapped or not (pread reads map nothing), and
    // its page cache is looked at once before the loader starts: the baseline that readahead
    // amplification is measured from.
    const std::string data_file = std::filesystem::weakly_canonical(layout.data_file).string();
    record.residency_files.push_back(data_file);
    auto cached_before = std::make_shared<std::optional<std::int64_t>>();
    {
        PageCacheProbe probe(data_file);
        BucketCounts buckets;
        const std::int64_t page = ::sysconf(_SC_PAGESIZE);
        const std::int64_t pages = (probe.size_bytes() + page - 1) / page;
        if (auto counts = probe.read(BucketLayout::make(pages, 1), buckets))
            *cached_before = counts->cached;
    }
    record.command = {own_executable(), "load", "--quiet"};
    for (std::string& argument : to_load_arguments(flags))
        record.command.push_back(std::move(argument));
    // The loader is ours: it must not run on as an orphan if the recorder is killed.
    record.command_dies_with_recorder = true;
    record.sidecar_variables = {{"LOADERLENS_LOADER_EVENTS", loader_events_suffix}};
    if (flags.trace) record.inputs.push_back(*flags.trace);

    RecordHooks hooks;
    // The loader's events reached the recording while it ran (the session tails the file);
    // what remains is matching workers the tree tracker saw late, and the loader's status.
    hooks.before_finish = [cached_before](Recorder& recorder, const RecordingClock&,
                                          const std::string&) {
        if (*cached_before)
            recorder.set_meta("loader.data_file_cached_pages_before",
                              std::to_string(**cached_before));
        recorder.end_loader_run();
    };
    hooks.after = [&out](const std::string& output, bool written) {
        out.output = output;
        out.written = written;
    };
    out.result = run_record(record, hooks);
    out.early_exit = std::nullopt;
    return out;
}

namespace {

int run_replay(const LoaderFlags& flags, RecordOptions& record, const LayoutOptions& layout) {
    const ReplayRecording replayed = record_replay(flags, record);
    if (replayed.early_exit) return *replayed.early_exit;
    const RecordResult& result = replayed.result;
    if (!replayed.output)
        return end_like_the_command(result); // nothing recorded: bad input, no loader
    const auto closed = &replayed;
    // A recording a failed write stopped early (the error line is out) still gets its report,
    // which says where it was cut; the run then fails, whatever the loader did.
    const int failed = result.exit_code == exit_ok ? exit_internal : result.exit_code;
    try {
        std::cout << render_report_text(build_report(Recording(*closed->output)),
                                        terminal_layout(layout));
        std::cout.flush();
    } catch (const std::exception& e) {
        print_error(*closed->output + ": no report: " + e.what());
        return failed;
    }
    if (!std::cout) return failed; // main() says why
    if (!closed->written && result.killed_by == 0) return failed;
    return end_like_the_command(result);
}
} // namespace

Runner add_replay(CLI::App& app) {
    struct Options {
        LoaderFlags flags;
        RecordOptions record;
        LayoutOptions layout;
    };
    auto o = std::make_shared<Options>();
    o->record.output = default_output_pattern("replay");
    CLI::App* sub = app.add_subcommand(
        "replay", "Run the reference loader under the recorder, then print the report");
    add_loader_flags(sub, o->flags);
    add_recording_options(sub, o->record);
    add_layout_options(sub, o->layout);
    sub->footer("Exit status: the loader's (2 for bad input, 1 if a worker failed).");
    return [o] { return run_replay(o->flags, o->record, o->layout); };
}

} // namespace loaderlens::cli
