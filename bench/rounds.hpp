// SPDX-License-Identifier: MIT
// Interleaved rounds of measurements and the commands used as baselines, shared by the residency
// and fleet benches.
//
// Why rounds: on this shared 2-core VM the load moves within seconds. Every measure runs once per
// round, the order rotating from round to round (one can warm caches for the next), and a ratio is
// the median over rounds of the two sides' figures within the same round: both saw the same
// moment of the machine.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace loaderlens::bench {

// The times of one measured thing, in µs (wall or CPU, as the Measure says).
struct Stats {
    std::vector<double> us;
    double median() const;
    double mean() const;
    double min() const;
    double max() const;
};

// One measurement: adds the times of one round to its Stats.
using Measure = std::function<void(Stats&)>;

// An in-process call, timed `reps` times per round by the wall clock. It returns false (or throws)
// when it failed: a timing of a failed call means nothing.
Measure timed(std::function<bool()> call, int reps = 1);
// The same timed by this thread's CPU clock (user + system: the kernel's /proc walks are done in
// the calling thread), the figure comparable with another process's CPU time.
Measure cpu_timed(std::function<bool()> call, int reps = 1);

// `rounds` rounds of all the measures, rotating which goes first, after one untimed round (it opens
// files, sizes buffers and loads the commands' binaries).
std::vector<Stats> interleaved(const std::vector<Measure>& measures, int rounds);

// The median over rounds of num / den within the round (each side's median in that round).
double paired_ratio(const Stats& num, const Stats& den, int rounds);

// "142.3 µs" or "18.20 ms".
std::string text_of(double us);

// A command run as a user runs it: spawn, wait for exit. Wall time from spawn to exit, the CPU time
// of the process and its children (rusage: user + system), and its stdout.
struct CommandRun {
    double us = 0, cpu_us = 0;
    std::string out;
};
// Throws SetupError naming the command when it cannot be started or exits non-zero.
CommandRun run_command(const std::vector<std::string>& argv);

// The number after `key` in a command's output ("Elapsed: 0.0188 seconds"); SetupError if absent.
double number_after(const std::string& out, const std::string& key, const char* command);

} // namespace loaderlens::bench
