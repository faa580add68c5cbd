// SPDX-License-Identifier: MIT
// The recorder's own memory (issue 28, part 6). SLURM counts `loaderlens record` as a process of
// the step, so its RSS (jobacct_gather/linux) or PSS (UsePss) is part of what is held against the
// job's limit. This bench attaches the CLI of this build (`record --pid`, its defaults) to a tree
// of W workers sharing one file, and for comparison in the same run, round by round:
//  - the same recorder on a tree of 1 worker (what more workers cost it), and
//  - `sleep`, the smallest process there is (what any process of the job costs),
// reading the recorder's /proc/PID/smaps_rollup every 250 ms after a 2 s warm-up, and its own
// meta after SIGINT (recorder_peak_rss_kb = VmHWM, recorder_pss_kb). Then the recorder's smaps at
// the end of the last W-worker round, by component (heap, thread stacks and other anonymous
// memory, the executable, each library), the breakdown docs/benchmarks-sampling.md quotes.
// Target: the W-worker recorder's largest RSS <= 10 MiB and the peak it records <= 10 MiB.
// A missed target prints MISSED and exits 3; a measurement that could not be made exits 1.
#include "loaderlens/recording.hpp"
#include "targets.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#ifndef LOADERLENS_CLI_PATH
#define LOADERLENS_CLI_PATH "loaderlens"
#endif

namespace {

using namespace loaderlens;
using namespace loaderlens::bench;
using Clock = std::chrono::steady_clock;

struct Options {
    std::string cli = LOADERLENS_CLI_PATH;
    int workers = 16, seconds = 20, rounds = 3;
    std::size_t mib = 256;
    double target_mib = 10.0;
};

struct Sizes {
    std::int64_t rss_kb = 0, pss_kb = 0, anon_kb = 0;
};

// Rss, Pss and Anonymous of a process's smaps_rollup (KiB).
Sizes rollup_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
    Sizes s;
    std::string key;
    std::int64_t kb = 0;
    std::string unit;
    while (in >> key) {
        if (key == "Rss:" || key == "Pss:" || key == "Anonymous:") {
            in >> kb >> unit;
            (key == "Rss:" ? s.rss_kb : key == "Pss:" ? s.pss_kb : s.anon_kb) = kb;
        }
    }
    if (s.rss_kb == 0)
        throw SetupError("cannot read /proc/" + std::to_string(pid) + "/smaps_rollup");
    return s;
}

// The component a mapping of the recorder belongs to: its file's base name without the version
// ("libsqlite3"), or [heap], [stack], [anon] (thread stacks, the rest of malloc's memory).
std::string component_of(const std::string& path) {
    if (path.empty()) return "[anon]";
    if (path.front() == '[') return path;
    std::string base = path.substr(path.rfind('/') + 1);
    if (auto deleted = base.find(" (deleted)"); deleted != std::string::npos) base.resize(deleted);
    if (auto so = base.find(".so"); so != std::string::npos) base.resize(so);
    return base;
}

std::map<std::string, Sizes> breakdown_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
    std::map<std::string, Sizes> parts;
    Sizes* current = nullptr;
    std::string line;
    while (std::getline(in, line)) {
        int path_at = 0;
        unsigned long start = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx %*s %*s %*s %*s %n", &start, &end, &path_at) >= 2 &&
            path_at > 0) {
            current = &parts[component_of(line.substr(static_cast<std::size_t>(path_at)))];
            continue;
        }
        long kb = 0;
        if (!current) continue;
        if (std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) current->rss_kb += kb;
        if (std::sscanf(line.c_str(), "Pss: %ld kB", &kb) == 1) current->pss_kb += kb;
        if (std::sscanf(line.c_str(), "Anonymous: %ld kB", &kb) == 1) current->anon_kb += kb;
    }
    return parts;
}

pid_t spawn(const std::vector<std::string>& argv) {
    const pid_t pid = fork();
    if (pid < 0) throw SetupError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        std::vector<char*> args;
        for (const auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    guard_process(pid);
    return pid;
}

void stop(pid_t pid, int signal, bool must_exit_0) {
    kill(pid, signal);
    int status = 0;
    waitpid(pid, &status, 0);
    unguard_process(pid);
    if (must_exit_0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        throw SetupError("the recorder ended with wait status " + std::to_string(status));
}

struct RecorderRun {
    Sizes largest; // the largest Rss and Pss read after the warm-up
    std::int64_t recorded_peak_kb = 0, recorded_pss_kb = 0; // its own meta
    std::map<std::string, Sizes> parts;
};

RecorderRun record(const Options& o, Scratch& scratch, const TargetTree& tree, int round) {
    const std::string db = scratch.path_for("memory-" + std::to_string(tree.leader()) + "-" +
                                            std::to_string(round) + ".db");
    const auto start = Clock::now();
    const pid_t recorder =
        spawn({o.cli, "record", "-q", "-o", db, "--pid", std::to_string(tree.leader())});
    RecorderRun r;
    std::this_thread::sleep_until(start + std::chrono::seconds(2));
    while (Clock::now() < start + std::chrono::seconds(o.seconds)) {
        const Sizes now = rollup_of(recorder);
        r.largest.rss_kb = std::max(r.largest.rss_kb, now.rss_kb);
        r.largest.pss_kb = std::max(r.largest.pss_kb, now.pss_kb);
        r.largest.anon_kb = std::max(r.largest.anon_kb, now.anon_kb);
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    r.parts = breakdown_of(recorder);
    stop(recorder, SIGINT, true);
    const Recording recording(db);
    r.recorded_peak_kb = recording.meta_number("recorder_peak_rss_kb").value_or(0);
    r.recorded_pss_kb = recording.meta_number("recorder_pss_kb").value_or(0);
    if (recording.processes().size() < static_cast<std::size_t>(tree.processes()))
        throw SetupError("the recording has fewer processes than the tree");
    return r;
}

// `sleep`'s own smaps_rollup once it sleeps: its comm is "sleep" (exec done) and its state S
// (in nanosleep: the dynamic loader never blocks, so its work is done).
Sizes sleep_baseline() {
    const pid_t pid = spawn({"sleep", "600"});
    const std::string stat_path = "/proc/" + std::to_string(pid) + "/stat";
    for (int i = 0;; ++i) {
        std::ifstream stat(stat_path);
        std::string text;
        std::getline(stat, text);
        if (text.find("(sleep) S") != std::string::npos) break;
        if (i == 5000) throw SetupError("sleep did not start within 10 s");
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const Sizes s = rollup_of(pid);
    stop(pid, SIGKILL, false);
    return s;
}

double mib_of(std::int64_t kb) {
    return static_cast<double>(kb) / 1024.0;
}

template <typename F> double median_of(const std::vector<RecorderRun>& runs, F figure) {
    std::vector<double> v;
    for (const auto& r : runs)
        v.push_back(static_cast<double>(figure(r)));
    std::sort(v.begin(), v.end());
    return v.empty()      ? 0
           : v.size() % 2 ? v[v.size() / 2]
                          : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        // --name=VALUE or --name VALUE (as scripts/bench.sh passes the other benches' --cli).
        auto value = [&](const char* name) -> const char* {
            const std::string prefix = std::string(name) + "=";
            if (a.rfind(prefix, 0) == 0) return argv[i] + prefix.size();
            return a == name && i + 1 < argc ? argv[++i] : nullptr;
        };
        if (const char* cli = value("--cli"))
            o.cli = cli;
        else if (const char* workers = value("--workers"))
            o.workers = std::atoi(workers);
        else if (const char* seconds = value("--seconds"))
            o.seconds = std::atoi(seconds);
        else if (const char* rounds = value("--rounds"))
            o.rounds = std::atoi(rounds);
        else if (const char* size = value("--mib"))
            o.mib = static_cast<std::size_t>(std::atol(size));
        else
            return false;
    }
    return o.workers >= 1 && o.seconds >= 4 && o.rounds >= 1 && o.mib >= 1;
}

} // namespace

int main(int argc, char** argv) {
    init_cleanup();
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: %s [--cli PATH] [--workers 16] [--seconds 20 (>= 4)] "
                     "[--rounds 3] [--mib 256]\n",
                     argv[0]);
        return 2;
    }
    try {
        utsname host{};
        ::uname(&host);
        const std::time_t now = std::time(nullptr);
        char date[32];
        std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
        std::printf("recorder memory bench: %s, kernel %s, %ld CPUs; %d workers sharing %zu MiB, "
                    "%d rounds of %d s\n",
                    date, host.release, sysconf(_SC_NPROCESSORS_ONLN), o.workers, o.mib, o.rounds,
                    o.seconds);
        Scratch scratch;
        const std::string file = scratch.make_file("data", o.mib * mib);
        TargetTree many(file, o.workers), one(file, 1);
        std::vector<RecorderRun> at_many, at_one;
        std::vector<Sizes> sleeps;
        for (int round = 0; round < o.rounds; ++round) {
            // The order rotates: neither side always runs on a machine the other just warmed.
            if (round % 2 == 0) {
                at_many.push_back(record(o, scratch, many, round));
                at_one.push_back(record(o, scratch, one, round));
            } else {
                at_one.push_back(record(o, scratch, one, round));
                at_many.push_back(record(o, scratch, many, round));
            }
            sleeps.push_back(sleep_baseline());
            std::printf("round %d: %d workers RSS %.2f PSS %.2f MiB (recorded peak %.2f); 1 worker "
                        "RSS %.2f PSS %.2f MiB; sleep RSS %.2f PSS %.2f MiB\n",
                        round + 1, o.workers, mib_of(at_many.back().largest.rss_kb),
                        mib_of(at_many.back().largest.pss_kb),
                        mib_of(at_many.back().recorded_peak_kb),
                        mib_of(at_one.back().largest.rss_kb), mib_of(at_one.back().largest.pss_kb),
                        mib_of(sleeps.back().rss_kb), mib_of(sleeps.back().pss_kb));
        }
        auto rss = [](const RecorderRun& r) { return r.largest.rss_kb; };
        auto pss = [](const RecorderRun& r) { return r.largest.pss_kb; };
        auto peak = [](const RecorderRun& r) { return r.recorded_peak_kb; };
        std::vector<double> sleep_rss, sleep_pss;
        for (const auto& s : sleeps) {
            sleep_rss.push_back(static_cast<double>(s.rss_kb));
            sleep_pss.push_back(static_cast<double>(s.pss_kb));
        }
        std::sort(sleep_rss.begin(), sleep_rss.end());
        std::sort(sleep_pss.begin(), sleep_pss.end());
        const double many_rss = median_of(at_many, rss), many_pss = median_of(at_many, pss),
                     one_rss = median_of(at_one, rss), one_pss = median_of(at_one, pss),
                     many_peak = median_of(at_many, peak);
        const double s_rss = sleep_rss[sleep_rss.size() / 2],
                     s_pss = sleep_pss[sleep_pss.size() / 2];
        std::printf("\nmedians: recorder at %d workers RSS %.2f MiB, PSS %.2f MiB, recorded peak "
                    "(VmHWM) %.2f MiB\n",
                    o.workers, mib_of(static_cast<std::int64_t>(many_rss)),
                    mib_of(static_cast<std::int64_t>(many_pss)),
                    mib_of(static_cast<std::int64_t>(many_peak)));
        std::printf("  against the recorder at 1 worker (RSS %.2f, PSS %.2f MiB): %.2fx RSS, "
                    "%.2fx PSS\n",
                    mib_of(static_cast<std::int64_t>(one_rss)),
                    mib_of(static_cast<std::int64_t>(one_pss)), many_rss / one_rss,
                    many_pss / one_pss);
        std::printf("  against sleep (RSS %.2f, PSS %.2f MiB): %.2fx RSS, %.2fx PSS\n",
                    mib_of(static_cast<std::int64_t>(s_rss)),
                    mib_of(static_cast<std::int64_t>(s_pss)), many_rss / s_rss, many_pss / s_pss);

        std::printf("\nthe recorder at %d workers, end of the last round, by component (KiB):\n"
                    "%-22s %8s %8s %8s\n",
                    o.workers, "component", "Rss", "Pss", "Anon");
        std::vector<std::pair<std::string, Sizes>> parts(at_many.back().parts.begin(),
                                                         at_many.back().parts.end());
        std::sort(parts.begin(), parts.end(),
                  [](const auto& a, const auto& b) { return a.second.rss_kb > b.second.rss_kb; });
        Sizes rest, total;
        int shown = 0;
        for (const auto& [name, s] : parts) {
            total.rss_kb += s.rss_kb;
            total.pss_kb += s.pss_kb;
            total.anon_kb += s.anon_kb;
            if (shown++ < 12 && s.rss_kb > 0) {
                std::printf("%-22s %8lld %8lld %8lld\n", name.c_str(),
                            static_cast<long long>(s.rss_kb), static_cast<long long>(s.pss_kb),
                            static_cast<long long>(s.anon_kb));
            } else {
                rest.rss_kb += s.rss_kb;
                rest.pss_kb += s.pss_kb;
                rest.anon_kb += s.anon_kb;
            }
        }
        std::printf("%-22s %8lld %8lld %8lld\n%-22s %8lld %8lld %8lld\n", "(the others)",
                    static_cast<long long>(rest.rss_kb), static_cast<long long>(rest.pss_kb),
                    static_cast<long long>(rest.anon_kb), "total",
                    static_cast<long long>(total.rss_kb), static_cast<long long>(total.pss_kb),
                    static_cast<long long>(total.anon_kb));

        const double target_kb = o.target_mib * 1024;
        const bool rss_ok = many_rss <= target_kb, peak_ok = many_peak <= target_kb;
        std::printf("\n%s: RSS at %d workers <= %.0f MiB\n%s: recorded peak <= %.0f MiB\n",
                    rss_ok ? "PASS" : "MISSED", o.workers, o.target_mib,
                    peak_ok ? "PASS" : "MISSED", o.target_mib);
        return rss_ok && peak_ok ? 0 : 3;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "recorder memory bench: %s\n", e.what());
        return 1;
    }
}
