// SPDX-License-Identifier: MIT
#include "fleet_recorder.hpp"

#include "loaderlens/recording.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Pss of smaps_rollup (KiB), -1 when unreadable.
std::int64_t fresh_pss_kb(pid_t pid) {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/smaps_rollup").c_str(), "r");
    if (!f) return -1;
    char line[256];
    std::int64_t kb = -1;
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "Pss:", 4) == 0) kb = std::atoll(line + 4);
    std::fclose(f);
    return kb;
}

// One stopped window: [from, to] on the wall clock (ms) and the fresh PSS by pid.
struct Moment {
    std::int64_t from_ms = 0, to_ms = 0;
    std::map<pid_t, std::int64_t> pss_kb;
};

Moment stopped_moment(const TargetTree& tree) {
    Moment m;
    std::vector<pid_t> pids = children_of(tree.leader());
    pids.push_back(tree.leader());
    kill(-tree.leader(), SIGSTOP);
    // The group is stopped once every member shows state T: the fresh reading is of a still tree.
    for (int tries = 0; tries < 200; ++tries) {
        bool all = true;
        for (pid_t p : pids) {
            std::FILE* f = std::fopen(("/proc/" + std::to_string(p) + "/stat").c_str(), "r");
            char text[512] = {};
            if (f) {
                if (!std::fgets(text, sizeof text, f)) text[0] = 0;
                std::fclose(f);
            }
            const char* close = std::strrchr(text, ')');
            if (close && close[2] != 'T') all = false;
        }
        if (all) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    m.from_ms = unix_ms();
    for (pid_t p : pids)
        if (const std::int64_t kb = fresh_pss_kb(p); kb >= 0) m.pss_kb[p] = kb;
    // Long enough for a 1 s rollup tick to start and end inside the window.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    m.to_ms = unix_ms();
    kill(-tree.leader(), SIGCONT);
    return m;
}

PssCheck check_moments(const RecordingData& data, const std::vector<Moment>& moments,
                       std::int64_t start_unix_ms, std::int64_t from_ms) {
    PssCheck c;
    std::map<std::int64_t, pid_t> pid_of;
    for (const ProcessInfo& p : data.processes)
        pid_of[p.id] = p.key.pid;
    // Rollup ticks: rows sharing a t_ms.
    std::map<std::int64_t, std::vector<const RollupSample*>> ticks;
    int rows = 0;
    double age_sum = 0;
    for (const auto& row : data.rollup) {
        if (!row.sample.pss) continue;
        ticks[row.t_ms].push_back(&row.sample);
        if (row.t_ms < from_ms) continue;
        const double age = static_cast<double>(row.sample.age_ms);
        age_sum += age;
        ++rows;
        c.max_age_ms = std::max(c.max_age_ms, age);
        (row.sample.pss_computed ? c.composite_rows
         : row.sample.age_ms > 0 ? c.kept_rows
                                 : c.fresh_rows)++;
    }
    c.mean_age_ms = rows ? age_sum / rows : 0;
    double sum_errors = 0;
    for (const Moment& m : moments) {
        ++c.moments;
        // A tick stamped after the stop and early enough to have read everyone before SIGCONT.
        const auto tick = ticks.lower_bound(m.from_ms - start_unix_ms + 20);
        if (tick == ticks.end() || tick->first > m.to_ms - start_unix_ms - 600) continue;
        double recorded = 0, fresh = 0;
        for (const RollupSample* s : tick->second) {
            const auto pid = pid_of.find(s->process_id);
            if (pid == pid_of.end()) continue;
            const auto kb = m.pss_kb.find(pid->second);
            if (kb == m.pss_kb.end() || kb->second <= 0) continue;
            recorded += static_cast<double>(*s->pss);
            fresh += static_cast<double>(kb->second);
            c.worst_process =
                std::max(c.worst_process, std::abs(static_cast<double>(*s->pss - kb->second)) /
                                              static_cast<double>(kb->second));
        }
        if (fresh <= 0) continue;
        ++c.matched;
        const double error = std::abs(recorded - fresh) / fresh;
        sum_errors += error;
        c.worst_sum = std::max(c.worst_sum, error);
    }
    c.mean_sum = c.matched ? sum_errors / c.matched : 0;
    return c;
}

} // namespace

RecorderRun record_tree(const std::string& cli, int seconds, Scratch& scratch,
                        const std::string& name, const TargetTree& tree, bool check_pss) {
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
    std::vector<Moment> moments;
    while (check_pss && seconds_since(start) + 3.5 < seconds) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        moments.push_back(stopped_moment(tree));
    }
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
    const RecordingData data = recording.read_all();
    r.gaps = tier_gaps(data, static_cast<std::int64_t>(warmup_s * 1000));
    const auto start_ns = data.meta.find("start_unix_ns");
    if (start_ns != data.meta.end())
        r.pss = check_moments(data, moments, std::stoll(start_ns->second) / 1000000,
                              static_cast<std::int64_t>(warmup_s * 1000));
    return r;
}

} // namespace loaderlens::bench
