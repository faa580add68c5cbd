// SPDX-License-Identifier: MIT
#include "rounds.hpp"

#include "targets.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace loaderlens::bench {

namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double wall_us() {
    return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

Measure timed_with(double (*clock)(), std::function<bool()> call, int reps) {
    return [clock, call = std::move(call), reps](Stats& stats) {
        for (int r = 0; r < reps; ++r) {
            const double start = clock();
            const bool ok = call();
            stats.us.push_back(clock() - start);
            if (!ok) throw SetupError("a measured call failed");
        }
    };
}

double seconds_of(const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

} // namespace

double Stats::median() const {
    if (us.empty()) return 0;
    std::vector<double> v = us;
    std::sort(v.begin(), v.end());
    const std::size_t mid = v.size() / 2;
    return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}
double Stats::mean() const {
    double sum = 0;
    for (double v : us)
        sum += v;
    return us.empty() ? 0 : sum / static_cast<double>(us.size());
}
double Stats::min() const {
    return us.empty() ? 0 : *std::min_element(us.begin(), us.end());
}
double Stats::max() const {
    return us.empty() ? 0 : *std::max_element(us.begin(), us.end());
}

Measure timed(std::function<bool()> call, int reps) {
    return timed_with(wall_us, std::move(call), reps);
}

Measure cpu_timed(std::function<bool()> call, int reps) {
    return timed_with(thread_cpu_us, std::move(call), reps);
}

std::vector<Stats> interleaved(const std::vector<Measure>& measures, int rounds) {
    std::vector<Stats> stats(measures.size()), warmup(measures.size());
    for (std::size_t k = 0; k < measures.size(); ++k)
        measures[k](warmup[k]);
    for (int i = 0; i < rounds; ++i)
        for (std::size_t k = 0; k < measures.size(); ++k) {
            const std::size_t j = (static_cast<std::size_t>(i) + k) % measures.size();
            measures[j](stats[j]);
        }
    return stats;
}

double paired_ratio(const Stats& num, const Stats& den, int rounds) {
    const auto round = [rounds](const Stats& x, std::size_t i) {
        const std::size_t n = x.us.size() / static_cast<std::size_t>(rounds);
        const auto first = x.us.begin() + static_cast<long>(i * n);
        return Stats{{first, first + static_cast<long>(n)}}.median();
    };
    Stats ratios;
    for (std::size_t i = 0; i < static_cast<std::size_t>(rounds); ++i)
        ratios.us.push_back(round(num, i) / round(den, i));
    return ratios.median();
}

std::string text_of(double us) {
    char t[32];
    if (us >= 1000)
        std::snprintf(t, sizeof t, "%.2f ms", us / 1000);
    else
        std::snprintf(t, sizeof t, "%.1f µs", us);
    return t;
}

CommandRun run_command(const std::vector<std::string>& argv) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw SetupError("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    CommandRun run;
    pid_t pid = -1;
    const auto start = Clock::now();
    const int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    // Read while it runs: an output larger than the pipe's buffer must not block the command.
    char buffer[4096];
    for (ssize_t n; error == 0 && (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
        run.out.append(buffer, static_cast<std::size_t>(n));
    close(pipe_fds[0]);
    int status = -1;
    rusage usage{};
    if (error == 0) wait4(pid, &status, 0, &usage);
    run.us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    run.cpu_us = (seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime)) * 1e6;
    if (error != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw SetupError("`" + argv[0] + "` failed (" +
                         (error ? std::strerror(error) : "exit status " + std::to_string(status)) +
                         "); is it installed?");
    return run;
}

double number_after(const std::string& out, const std::string& key, const char* command) {
    const std::size_t at = out.find(key);
    if (at == std::string::npos) throw SetupError(std::string(command) + " printed no " + key);
    return std::strtod(out.c_str() + at + key.size(), nullptr);
}

} // namespace loaderlens::bench
