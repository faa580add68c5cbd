// SPDX-License-Identifier: MIT
#include "fleet_recorder.hpp"

#include "loaderlens/recording.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace loaderlens::bench {

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds(pid_t pid) {
    const ProcStat stat = read_proc_stat(pid);
    return static_cast<double>(stat.utime_ticks + stat.stime_ticks) /
           static_cast<double>(sysconf(_SC_CLK_TCK));
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Throws when the recorder has already exited (it must run until we stop it).
void expect_running(pid_t recorder) {
    int status = 0;
    if (waitpid(recorder, &status, WNOHANG) == recorder) {
        unguard_process(recorder);
        throw SetupError("the recorder exited early with status " + std::to_string(status) +
                         " (is the CLI at the given --cli path?)");
    }
}

// Sends SIGINT and waits up to 30 s for a clean exit; returns the wait status.
int stop_recorder(pid_t recorder) {
    kill(recorder, SIGINT);
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    int status = 0;
    while (waitpid(recorder, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
            kill(recorder, SIGKILL);
            waitpid(recorder, &status, 0);
            unguard_process(recorder);
            throw SetupError("the recorder did not stop within 30 s of SIGINT");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    unguard_process(recorder);
    return status;
}

// Sample times per process, each time once (a maps run writes one row per object).
using Times = std::map<std::int64_t, std::set<std::int64_t>>;

// Each process's samples in [from_ms, to_ms]: its mean interval is the window over the count (a
// process sampled once in 18 s had an 18 s interval, not none); the longest stretch without a
// sample counts the window's edges too.
TierGaps gaps_of(const Times& times, std::int64_t from_ms, std::int64_t to_ms) {
    TierGaps g;
    const auto window = static_cast<double>(to_ms - from_ms);
    for (const auto& [process, ts] : times) {
        ++g.processes;
        std::vector<std::int64_t> in(ts.lower_bound(from_ms), ts.upper_bound(to_ms));
        g.fewest_samples = g.processes == 1
                               ? static_cast<int>(in.size())
                               : std::min(g.fewest_samples, static_cast<int>(in.size()));
        g.worst_mean_ms = std::max(g.worst_mean_ms,
                                   in.empty() ? window : window / static_cast<double>(in.size()));
        std::int64_t previous = from_ms;
        for (std::int64_t t : in) {
            g.longest_gap_ms = std::max(g.longest_gap_ms, static_cast<double>(t - previous));
            previous = t;
        }
        g.longest_gap_ms = std::max(g.longest_gap_ms, static_cast<double>(to_ms - previous));
    }
    return g;
}

// Per tier, the intervals between each process's own samples in [from_ms, end - 300 ms]: the
// last 300 ms hold the extra sample of every tier the recorder takes when it stops.
std::map<std::string, TierGaps> tier_gaps(const RecordingData& data, std::int64_t from_ms) {
    Times fast, rollup, maps, residency;
    std::int64_t end = 0;
    for (const auto& row : data.fast) {
        if (row.sample.rss) fast[row.sample.process_id].insert(row.t_ms);
        end = std::max(end, row.t_ms);
    }
    for (const auto& row : data.rollup)
        if (row.sample.pss) rollup[row.sample.process_id].insert(row.t_ms);
    for (const auto& row : data.maps)
        maps[row.process_id].insert(row.t_ms);
    for (const auto& row : data.mapped_residency)
        residency[row.sample.process_id].insert(row.t_ms);
    const std::int64_t to = end - 300;
    return {{"fast", gaps_of(fast, from_ms, to)},
            {"rollup", gaps_of(rollup, from_ms, to)},
            {"maps", gaps_of(maps, from_ms, to)},
            {"residency", gaps_of(residency, from_ms, to)}};
}

} // namespace

RecorderRun record_tree(const std::string& cli, int seconds, Scratch& scratch,
                        const std::string& name, const TargetTree& tree) {
    const std::string db = scratch.path_for("record-" + std::to_string(tree.leader()) + ".db");
    const std::string pid_text = std::to_string(tree.leader());
    std::fprintf(stderr, "%s: recording pid %s for %d s...\n", name.c_str(), pid_text.c_str(),
                 seconds);
    const auto start = Clock::now();
    const pid_t recorder = fork();
    if (recorder < 0) throw SetupError(std::string("fork: ") + std::strerror(errno));
    if (recorder == 0) {
        execl(cli.c_str(), "loaderlens", "record", "-q", "-o", db.c_str(), "--pid",
              pid_text.c_str(), static_cast<char*>(nullptr));
        std::fprintf(stderr, "cannot run %s: %s\n", cli.c_str(), std::strerror(errno));
        _exit(127);
    }
    guard_process(recorder);

    // A second reading after start-up separates the one-off cost (exec, SQLite schema, the first
    // scan of /proc and first open of every file) from the steady rate.
    const double warmup_s = std::min(2.0, seconds / 4.0);
    std::this_thread::sleep_until(start + std::chrono::duration<double>(warmup_s));
    expect_running(recorder);
    const double cpu_warm = cpu_seconds(recorder), wall_warm = seconds_since(start);
    std::this_thread::sleep_until(start + std::chrono::seconds(seconds));
    expect_running(recorder);
    RecorderRun r{name, tree.processes()};
    r.cpu_s = cpu_seconds(recorder);
    r.wall_s = seconds_since(start);
    r.steady_percent = 100.0 * (r.cpu_s - cpu_warm) / (r.wall_s - wall_warm);
    const int status = stop_recorder(recorder);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw SetupError(name + ": the recorder ended with wait status " + std::to_string(status));

    const Recording recording(db);
    const ReportData report = build_report(recording);
    r.recorded = report.processes.size();
    r.peak_rss = report.totals.rss.value;
    r.peak_pss = report.totals.pss.value;
    r.tiers = report.tiers;
    r.gaps = tier_gaps(recording.read_all(), static_cast<std::int64_t>(warmup_s * 1000));
    return r;
}

} // namespace loaderlens::bench
