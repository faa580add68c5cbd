// SPDX-License-Identifier: MIT
// `loaderlens record`, reusable: `replay` records the reference loader through the same path.
#pragma once

#include "commands.hpp"
#include "loaderlens/clock.hpp"
#include "loaderlens/recorder.hpp"

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace loaderlens::cli {

struct RecordOptions {
    std::string output; // empty: default_output_pattern()
    bool force = false, no_clobber = false;
    std::optional<pid_t> pid;
    std::vector<std::string> command;
    std::vector<std::string> intervals;
    std::string cpu_budget = "5%";
    std::string pss_max_age = "5s";
    std::string mem_limit; // the job's memory limit, for the report's margins (empty: none)
    std::optional<std::string> worker_match;
    std::int64_t maps_min_kb = 1024;
    int residency_buckets = 256;
    std::string residency_min_size = "1MiB";
    std::vector<std::string> residency_files;
    std::string residency_method = "cachestat";
    bool quiet = false;
    // --metrics-textfile: DIR/NAME.prom rewritten every second for node_exporter (docs/metrics.md).
    std::optional<std::string> metrics_textfile;
    // Set by `replay`, not on the command line:
    // files made beside the recording for the command, {environment variable, suffix}: the
    // variable names OUTPUT+suffix (absolute); removed when the recording ends.
    std::vector<std::pair<std::string, std::string>> sidecar_variables;
    // The command is loaderlens's own (`load`): it dies with the recorder (launch.hpp).
    bool command_dies_with_recorder = false;
    // Files the run reads besides --file and the command's executable: never overwritten.
    std::vector<std::string> inputs;
};

// What a caller of run_record adds around a launched command.
struct RecordHooks {
    // After the command ended and sampling stopped, before the recording is finished.
    std::function<void(Recorder&, const RecordingClock&, const std::string& output)> before_finish;
    // After the recording was closed, when there is one: `written` false when a write failed
    // (disk full) and the recording stopped where it was. Not called for bad input, nor when the
    // command could not be started (the recording is removed then).
    std::function<void(const std::string& output, bool written)> after;
};

// The options every recording command shares: -o, --force, --interval, --cpu-budget,
// --maps-min-size, the residency options, --metrics-textfile, -q.
void add_recording_options(CLI::App* sub, RecordOptions& options);

struct RecordResult {
    int exit_code = 0; // the command's status as a shell shows it (128+N if killed by N)
    int killed_by = 0; // the signal that killed the command; 0 if it exited (or in attach mode)
};

// Records (launching o.command or attaching to o.pid).
RecordResult run_record(RecordOptions& o, const RecordHooks& hooks = {});

// Ends the way the command ended: dies of the signal that killed it (the recording is finished
// by then), else returns the exit code to exit with.
int end_like_the_command(const RecordResult& result);

} // namespace loaderlens::cli
