// `loaderlens replay`: runs the reference loader under the recorder and prints the report.
// The loader runs as `loaderlens load ...` in a child (a fresh process image, like a training
// script) and tells the recorder its epochs and workers through LOADERLENS_MARKERS and
// LOADERLENS_LOADER_EVENTS.
#include "loader_options.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "record_command.hpp"

#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

std::string own_executable() {
    std::error_code error;
    auto path = std::filesystem::read_symlink("/proc/self/exe", error);
    return error ? std::string("loaderlens") : path.string();
}

int run_replay(const LoaderFlags& flags, RecordOptions& record) {
    auto options = to_loader_options(flags);
    if (!options) return exit_bad_input;
    try { // bad input is reported before a recording is created
        probes::DatasetLayout layout;
        probes::check_loader(*options, layout);
    } catch (const std::runtime_error& e) {
        print_error(e.what());
        return exit_bad_input;
    }
    record.command = {own_executable(), "load", "--quiet"};
    for (std::string& argument : to_load_arguments(flags))
        record.command.push_back(std::move(argument));

    auto events_path = std::make_shared<std::string>();
    RecordHooks hooks;
    hooks.environment = [events_path](const std::string& output) {
        *events_path = std::filesystem::absolute(output + ".loader").string();
        int fd = ::open(events_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) ::close(fd);
        return std::vector<std::pair<std::string, std::string>>{
            {"LOADERLENS_LOADER_EVENTS", *events_path}};
    };
    hooks.before_finish = [events_path](Recorder& recorder, const RecordingClock& clock) {
        recorder.write_loader_run(read_loader_events(*events_path, clock));
    };
    std::optional<std::string> written_to;
    hooks.after = [events_path, &written_to](const std::string& output, bool written) {
        if (!events_path->empty()) ::unlink(events_path->c_str());
        if (written) written_to = output;
    };
    const int code = run_record(record, hooks);
    if (!written_to) return code;
    try {
        std::cout << render_report_text(build_report(Recording(*written_to)));
    } catch (const std::exception& e) {
        print_error(e.what());
        return code == exit_ok ? exit_internal : code;
    }
    return code;
}

} // namespace

Runner add_replay(CLI::App& app) {
    struct Options {
        LoaderFlags flags;
        RecordOptions record;
    };
    auto o = std::make_shared<Options>();
    o->record.output = "loaderlens-replay-%N-%p.db";
    CLI::App* sub = app.add_subcommand(
        "replay", "Run the reference loader under the recorder, then print the report");
    add_loader_flags(sub, o->flags);
    add_recording_options(sub, o->record);
    sub->footer("Exit status: the loader's (2 for bad input, 1 if a worker failed).");
    return [o] { return run_replay(o->flags, o->record); };
}

} // namespace loaderlens::cli
