// SPDX-License-Identifier: MIT
// `loaderlens record`: runs a command (or attaches to a PID) and records its process tree.
#include "record_command.hpp"

#include "loaderlens/launcher.hpp"
#include "loaderlens/proc_text.hpp"
#include "loaderlens/process_list.hpp"
#include "loaderlens/session.hpp"
#include "loaderlens/slurm_site_reader.hpp"
#include "metrics_textfile.hpp"
#include "numeric_option.hpp"
#include "output_checks.hpp"
#include "output_name.hpp"
#include "record_options.hpp"
#include "recording_output.hpp"
#include "run_meta.hpp"
#include "status_line.hpp"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words)
        out += (out.empty() ? "" : " ") + w;
    return out;
}

// Whether we may read any user's processes: CAP_SYS_PTRACE in our effective set (root has it,
// unless a container took it away).
bool may_read_any_process() {
    constexpr unsigned cap_sys_ptrace = 19; // linux/capability.h
    const auto status = read_text_file("/proc/self/status");
    const std::size_t line = status ? status->find("\nCapEff:") : std::string::npos;
    if (line == std::string::npos) return geteuid() == 0;
    const unsigned long long effective = std::strtoull(status->c_str() + line + 8, nullptr, 16);
    return (effective >> cap_sys_ptrace) & 1;
}

// Why we may not read `pid`'s memory (smaps_rollup, pagemap, maps), or nothing: said as a warning,
// not refused, since statm and status (RSS and its split) of any process are readable and are
// recorded, the rest as unavailable with the reason (docs/figures.md). The kernel
// (ptrace_may_access) wants its real, effective and saved user IDs all to be ours, or
// CAP_SYS_PTRACE. Read from /proc/PID/status directly: one file, where `ps`'s list would read
// every process on the machine for the same line.
std::optional<std::string> owner_problem(pid_t pid) {
    const auto owner = read_process_owner(pid);
    if (!owner || may_read_any_process()) return std::nullopt;
    const uid_t me = geteuid();
    for (uid_t uid : {owner->effective, owner->real, owner->saved})
        if (uid != me)
            return "not your process: owned by " + user_name(uid) + " (uid " + std::to_string(uid) +
                   "): PSS, USS, mapped files and residency will be unavailable; run as that user "
                   "or as root (CAP_SYS_PTRACE) for them";
    return std::nullopt;
}

// Why `pid` cannot be attached to, or nothing when it can.
std::optional<std::string> attach_problem(pid_t pid) {
    if (pid <= 0) return "not a process ID";
    auto stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
    auto fields = stat ? parse_stat(*stat) : std::nullopt;
    if (!fields) return "no such process";
    if (fields->state == 'Z') return "is a zombie: it has exited and holds no memory";
    // /proc/TID/stat of a thread exists too, but threads are not listed in /proc.
    auto status = read_text_file("/proc/" + std::to_string(pid) + "/status");
    if (status && status->find("\nTgid:\t" + std::to_string(pid) + "\n") == std::string::npos)
        return "is a thread, not a process: give its process ID (Tgid in /proc/PID/status)";
    return std::nullopt;
}

// Whether a signal the recorder received must be passed on to the command.
//  - Sent with kill() (scancel, timeout, a user): it reached only us. Forward.
//  - From the terminal (SI_KERNEL): Ctrl-C and Ctrl-\ reach the whole foreground process group,
//    the command included, unless the command moved to a group of its own. A hangup reaches only
//    the session leader, which may be us (ssh -t host loaderlens record ...). Forward those.
bool must_forward(const signalfd_siginfo& info, pid_t child) {
    if (info.ssi_code != SI_KERNEL) return true;
    if (static_cast<int>(info.ssi_signo) == SIGHUP) return true;
    return getpgid(child) != getpgrp();
}

// Signals the recorder handles through a signalfd instead of dying from them.
sigset_t handled_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD})
        sigaddset(&set, sig);
    return set;
}

// The executable `name` runs (searched in PATH as execvp does), or nothing when not found.
std::optional<std::string> executable_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    const char* search = std::getenv("PATH");
    std::string directories = search ? search : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0; start <= directories.size();) {
        std::size_t end = directories.find(':', start);
        if (end == std::string::npos) end = directories.size();
        std::string directory = directories.substr(start, end - start);
        const std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    return std::nullopt;
}

// What a launched command reads that the recording must never replace: the files it follows
// (--file, replay's dataset and trace) and its own executable.
InputFiles inputs_of(const RecordOptions& o) {
    InputFiles inputs;
    for (const std::string& file : o.residency_files)
        inputs.add(file);
    for (const std::string& file : o.inputs)
        inputs.add(file);
    if (!o.command.empty())
        if (auto executable = executable_path(o.command[0])) inputs.add(*executable);
    return inputs;
}

// What the sampling loop ended with.
struct LoopOutcome {
    std::optional<int> child_status;
    std::string stop_reason;
    bool write_failure_reported = false;
    bool signal_noted = false;
};

// Samples until the command exits (launch) or the tree is gone or we are told to stop (attach),
// forwarding signals to the command.
LoopOutcome sampling_loop(Session& session, Recorder& recorder, const RecordingClock& clock,
                          int signal_fd, pid_t child, bool attach, const std::string& output,
                          bool quiet, MetricsTextfile* textfile, SlurmSiteReader* site) {
    StatusLine status(!quiet && isatty(STDERR_FILENO), output);
    LoopOutcome outcome;
    // The first fatal signal and when: a recording cut later by SIGKILL (KillWait after scancel)
    // shows how long the command had to stop.
    auto note_signal = [&](int sig) {
        outcome.stop_reason = strsignal(sig);
        if (!session.write_error().empty() || outcome.signal_noted) return;
        try {
            recorder.set_meta("signal_received", outcome.stop_reason);
            recorder.set_meta("signal_received_ms", std::to_string(clock.now_ms()));
            outcome.signal_noted = true;
        } catch (const std::exception&) { // the next pump() reports the write error
        }
    };
    bool stop = false;
    std::int64_t next_footprint_ms = 0;
    while (!stop) {
        // A marker's sample wakes the loop to commit it before it is acknowledged.
        pollfd pfds[2] = {{signal_fd, POLLIN, 0}, {session.commit_wanted_fd(), POLLIN, 0}};
        poll(pfds, 2, 200);
        signalfd_siginfo info{};
        while (read(signal_fd, &info, sizeof info) == sizeof info) {
            const int sig = static_cast<int>(info.ssi_signo);
            if (sig == SIGCHLD) continue; // reaped below
            if (attach) {
                if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
                    stop = true;
                    outcome.stop_reason = strsignal(sig);
                }
                continue;
            }
            if (must_forward(info, child)) kill(child, sig);
            if (sig != SIGUSR1 && sig != SIGUSR2) note_signal(sig);
        }
        if (!attach) {
            int wait_status = 0;
            pid_t reaped;
            while ((reaped = waitpid(-1, &wait_status, WNOHANG)) > 0) {
                if (reaped == child) outcome.child_status = wait_status;
                session.note_exit_status(reaped, wait_status);
            }
            if (outcome.child_status) stop = true;
        } else if (session.tree_gone()) {
            stop = true;
        }
        // The site's SLURM configuration, written from this thread (the recorder's only writer)
        // once the reading process has answered.
        if (site && !site->taken() && session.write_error().empty()) {
            if (auto rows = site->poll()) {
                try {
                    for (const auto& [key, value] : *rows)
                        recorder.set_meta(key, value);
                } catch (const std::exception&) { // the next pump() reports the write error
                }
            }
        }
        // The recorder's own size every second, not only at the end: a recorder killed with its
        // step (OverMemoryKill) leaves its share of the step's figures in the recording.
        if (const std::int64_t now = clock.now_ms();
            now >= next_footprint_ms && session.write_error().empty()) {
            next_footprint_ms = now + 1000;
            try {
                write_recorder_footprint(recorder);
            } catch (const std::exception&) { // the next pump() reports the write error
            }
        }
        session.pump();
        if (auto error = session.write_error(); !error.empty() && !outcome.write_failure_reported) {
            status.clear();
            print_error(output + ": recording stopped, the command goes on: " + error);
            outcome.write_failure_reported = true;
        }
        for (const std::string& warning : session.take_warnings()) {
            status.clear();
            print_error(warning);
        }
        if (auto warning = textfile ? textfile->take_warning() : std::nullopt) {
            status.clear();
            print_error(*warning);
        }
        status.update(session.status());
    }
    session.stop();
    // scancel signals every process of the step one after another: the command may die and be
    // reaped before the recorder's own SIGTERM is queued. What came during the last samples is
    // noted too (the command is gone: nothing is forwarded).
    if (!attach && !outcome.signal_noted) {
        signalfd_siginfo info{};
        while (read(signal_fd, &info, sizeof info) == sizeof info) {
            const int sig = static_cast<int>(info.ssi_signo);
            if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) note_signal(sig);
        }
    }
    status.clear();
    return outcome;
}

} // namespace

RecordResult run_record(RecordOptions& o, const RecordHooks& hooks) {
    const bool attach = o.pid.has_value();
    if (attach == !o.command.empty()) {
        print_error(attach ? "record: give either --pid or a command after --, not both"
                           : "record: nothing to record: give --pid PID or -- COMMAND [ARGS...]");
        return {exit_bad_input, 0};
    }
    SessionOptions session_options;
    if (!session_options_from(o, session_options)) return {exit_bad_input, 0};
    if (attach) {
        if (auto problem = attach_problem(*o.pid)) {
            print_error("--pid " + std::to_string(*o.pid) + ": " + *problem);
            return {exit_bad_input, 0};
        }
        if (auto partial = owner_problem(*o.pid))
            print_error("--pid " + std::to_string(*o.pid) + ": " + *partial);
    }

    // Blocked before any file is made: a SIGINT or SIGTERM from now on goes through the sampling
    // loop, which ends with the sidecars removed, instead of killing us with files left behind.
    sigset_t signals = handled_signals();
    sigprocmask(SIG_BLOCK, &signals, nullptr);

    // The marker file the command (or the attached process) appends to: the user's own
    // (LOADERLENS_MARKERS already set), or ours beside the recording, removed at the end; and the
    // file where the recorder says that a marker's sample was taken (core's SampleAck).
    const char* user_markers = std::getenv("LOADERLENS_MARKERS");
    const bool own_markers = !user_markers || !*user_markers;
    RecordingRequest request{
        .path = expand_output_name(o.output.empty() ? default_output_pattern() : o.output),
        .overwrite = o.force,
        .no_clobber = o.no_clobber};
    std::vector<std::string> sidecar_variables;
    if (own_markers) {
        sidecar_variables.push_back("LOADERLENS_MARKERS");
        request.sidecar_suffixes.push_back(".markers");
    }
    sidecar_variables.push_back("LOADERLENS_SAMPLED");
    request.sidecar_suffixes.push_back(".sampled");
    if (!attach) {
        for (const auto& [variable, suffix] : o.sidecar_variables) {
            sidecar_variables.push_back(variable);
            request.sidecar_suffixes.push_back(suffix);
        }
        request.inputs = inputs_of(o);
    }
    if (o.metrics_textfile) {
        // %j, %s, %t, %N... as in -o: one textfile per job step and task in a shared directory.
        o.metrics_textfile = expand_output_name(*o.metrics_textfile);
        // Checked before any file is made: the textfile never replaces a file of this run.
        InputFiles run_files = request.inputs;
        run_files.add_recording(request.path);
        if (auto problem = MetricsTextfile::problem(*o.metrics_textfile, run_files)) {
            print_error(*problem);
            return {exit_bad_input, 0};
        }
    }
    CreatedRecorder created;
    try {
        created = create_recorder(request);
        if (!created.taken.empty())
            print_error(created.taken + " exists: recording to " + created.path +
                        " instead (--force overwrites, --no-clobber refuses)");
    } catch (const RecorderError& e) {
        print_error(e.what());
        // No room for even an empty recording: the output could not be written (1).
        return {e.out_of_space ? exit_internal : exit_bad_input, 0};
    }
    std::unique_ptr<Recorder>& recorder = created.recorder;
    const std::string output = created.path;

    int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
    raise_open_file_limit();

    RecordingClock clock;
    write_run_meta(*recorder, clock, session_options, o);
    // Inside a SLURM job: what the site applies, read by a process of its own from now on (never
    // before the command starts, never from the recorded tree). Started while we have one thread
    // and are no subreaper yet.
    std::unique_ptr<SlurmSiteReader> site = SlurmSiteReader::start_in_job();
    TrackerOptions tracker{.worker_match = o.worker_match};
    pid_t child = 0;
    // Absolute: the command may change directory before it writes a marker.
    const std::string markers_path = own_markers ? created.sidecars.front().path()
                                                 : std::filesystem::absolute(user_markers).string();
    recorder->set_meta("markers_file", markers_path);
    int user_markers_directory = -1; // held while the session reads the user's marker file
    if (!own_markers) {
        // The user's file: looked at under its directory, opened only while it is a regular
        // file of one owner (MarkerTail).
        user_markers_directory = ::open(std::filesystem::path(markers_path).parent_path().c_str(),
                                        O_PATH | O_DIRECTORY | O_CLOEXEC);
        session_options.markers =
            Sidecar{-1, user_markers_directory,
                    std::filesystem::path(markers_path).filename().string(), markers_path};
    }
    for (std::size_t i = 0; i < sidecar_variables.size(); ++i) {
        const std::string& variable = sidecar_variables[i];
        const Sidecar sidecar = created.sidecars[i].sidecar();
        if (variable == "LOADERLENS_MARKERS") session_options.markers = sidecar;
        if (variable == "LOADERLENS_LOADER_EVENTS") session_options.loader_events = sidecar;
        if (variable == "LOADERLENS_SAMPLED") session_options.sampled = sidecar;
    }
    if (attach) {
        tracker.scan_root = tracker.main_pid = *o.pid;
        recorder->set_meta("mode", "attach");
        recorder->set_meta("command", read_cmdline(*o.pid));
        // The process runs already: nothing can hand it the files' names. Whoever attached us
        // knows them (the Python module sets LOADERLENS_MARKERS and LOADERLENS_SAMPLED in its
        // own process once they exist; docs/python.md); a person is told here.
        if (!o.quiet)
            std::fprintf(stderr,
                         "loaderlens: attached to PID %d; markers: lines appended to %s, each "
                         "acknowledged in %s once sampled\n",
                         *o.pid, markers_path.c_str(), created.sidecars.back().path().c_str());
    } else {
        // Orphaned grandchildren are re-parented to us, so they stay in the tree and get reaped.
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        std::vector<std::pair<std::string, std::string>> environment;
        if (!own_markers) environment.emplace_back("LOADERLENS_MARKERS", markers_path);
        // Each file beside the recording by its name (for a program that opens it, as the
        // README's recipe does) and as a descriptor the command inherits (LOADERLENS_*_FD: the
        // reference loader writes through it and never opens the name, which someone may have
        // swapped for a link by then).
        std::vector<int> handed;
        for (std::size_t i = 0; i < sidecar_variables.size(); ++i) {
            const std::string& variable = sidecar_variables[i];
            const SidecarFile& file = created.sidecars[i];
            environment.emplace_back(variable, file.path());
            const bool read_by_command = variable == "LOADERLENS_SAMPLED";
            if (int fd = file.reopen(read_by_command ? O_RDONLY : O_WRONLY | O_APPEND); fd >= 0) {
                handed.push_back(fd);
                environment.emplace_back(variable + "_FD", file.identity(fd));
            }
        }
        Launched launched =
            launch(o.command, environment,
                   {.die_with_parent = o.command_dies_with_recorder, .inherited_fds = handed});
        for (int fd : handed)
            ::close(fd);
        if (launched.exec_errno != 0) {
            if (user_markers_directory >= 0) ::close(user_markers_directory);
            discard_recording(created);
            print_error(o.command[0] + ": cannot run: " + std::strerror(launched.exec_errno));
            return {exit_code_for_exec_errno(launched.exec_errno), 0};
        }
        child = launched.pid;
        tracker.scan_root = getpid();
        tracker.track_scan_root = false;
        tracker.main_pid = child;
        recorder->set_meta("mode", "launch");
        recorder->set_meta("command", join(o.command));
    }
    recorder->set_meta("root_pid", std::to_string(tracker.main_pid));
    recorder->commit();
    // Reads the recording once a second from its own thread: a slow or failing textfile
    // directory never holds up the sampling loop, which forwards the command's signals.
    std::unique_ptr<MetricsTextfile> textfile;
    if (o.metrics_textfile)
        textfile = std::make_unique<MetricsTextfile>(*o.metrics_textfile, output);

    Session session(session_options, tracker, *recorder, clock);
    session.start();
    LoopOutcome outcome = sampling_loop(session, *recorder, clock, signal_fd, child, attach, output,
                                        o.quiet, textfile.get(), site.get());
    if (textfile) textfile->stop_reading(); // before finish(), which folds the WAL in

    const bool interrupted = attach ? !outcome.stop_reason.empty()
                                    : !outcome.stop_reason.empty() && outcome.child_status &&
                                          WIFSIGNALED(*outcome.child_status);
    bool written = !outcome.write_failure_reported;
    // After a failed write the recording stopped where it was: finishing it now (the space the
    // failed transaction freed often takes the last rows) would call a recording with a gap at
    // its end "finished". Left as it is, the report says it was cut at its last sample.
    if (written) {
        try {
            if (outcome.child_status) {
                recorder->set_meta("exit_status", std::to_string(exit_code_for_wait_status(
                                                      *outcome.child_status)));
                if (WIFSIGNALED(*outcome.child_status))
                    recorder->set_meta("exit_signal", strsignal(WTERMSIG(*outcome.child_status)));
            }
            if (!outcome.stop_reason.empty())
                recorder->set_meta("stop_reason", outcome.stop_reason);
            if (site && !site->taken()) {
                // After a signal to the command (scancel) no wait: SLURM's KillWait runs.
                const bool hurry = !attach && !outcome.stop_reason.empty();
                const auto rows = hurry ? site->now("not read before the recording ended (" +
                                                    outcome.stop_reason + ")")
                                        : site->wait();
                for (const auto& [key, value] : rows)
                    recorder->set_meta(key, value);
            }
            if (hooks.before_finish) hooks.before_finish(*recorder, clock, output);
            write_recorder_footprint(*recorder);
            recorder->finish(interrupted ? "interrupted" : "finished", clock.now_ms());
        } catch (const std::exception& e) {
            print_error(output + ": cannot finish the recording: " + e.what());
            written = false;
        }
    }
    recorder.reset();
    created.sidecars.clear(); // removed
    if (user_markers_directory >= 0) ::close(user_markers_directory);
    if (textfile) textfile->write_final();
    if (!o.quiet && written)
        std::fprintf(stderr, "loaderlens: recording written to %s (see: loaderlens report %s)\n",
                     output.c_str(), output.c_str());
    if (hooks.after) hooks.after(output, written);
    if (!outcome.child_status) return {exit_ok, 0};
    return {exit_code_for_wait_status(*outcome.child_status),
            WIFSIGNALED(*outcome.child_status) ? WTERMSIG(*outcome.child_status) : 0};
}

int end_like_the_command(const RecordResult& result) {
    if (result.killed_by == 0) return result.exit_code;
    // Die of the same signal, after the recording is finished, so that SLURM (CANCELLED 0:15, not
    // FAILED 15:0), shells (Ctrl-C stops a script) and `wait` see what they would have seen
    // without the recorder. No core file of ours: a core belongs to the command.
    std::cout.flush();
    std::fflush(nullptr);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::signal(result.killed_by, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, result.killed_by);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    raise(result.killed_by);
    return result.exit_code; // a signal whose default is not to terminate
}

Runner add_record(CLI::App& app) {
    auto options = std::make_shared<RecordOptions>();
    CLI::App* sub = app.add_subcommand(
        "record", "Record the memory of a command's process tree (or of a running PID)");
    add_recording_options(sub, *options);
    // From 0, so that --pid 0 gets the reason it is not a process; up to PID_MAX_LIMIT.
    add_whole_number_option<pid_t>(
        sub, "--pid", options->pid, 0, 4 << 20,
        "Attach to a running process and record its tree until it exits or SIGINT; markers are "
        "read from OUT.markers (docs/python.md)");
    sub->add_option("--worker-match", options->worker_match,
                    "POSIX extended regex (at most 256 bytes) on comm or the first 4096 bytes of "
                    "the command line that marks workers (default: see docs/workers.md)");
    sub->add_option("command", options->command, "The command to run (after --)");
    sub->footer("Exit status: the command's (128+N if killed by signal N; 127 not found; 126 not "
                "executable); 2 for bad input.");
    return [options] { return end_like_the_command(run_record(*options)); };
}

} // namespace loaderlens::cli
