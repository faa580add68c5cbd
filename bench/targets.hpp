// SPDX-License-Identifier: MIT
// Target processes and scratch files for the benchmarks.
//
// The benchmarks need processes whose memory looks like a data loader's: a large file mapped
// read-only and shared, every page resident. They are forked from the benchmark itself (no helper
// binary to find) and each leads its own process group, so one kill() ends a parent with all its
// workers. Everything made here is also removed when the benchmark is interrupted (SIGINT, SIGTERM,
// SIGHUP): a bench run must never leave gigabytes of files or paused processes behind.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens::bench {

inline constexpr std::size_t mib = std::size_t{1} << 20;

// Thrown when the bench cannot set up what it measures (a broken run, not a missed target).
struct SetupError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Must run first in main(): makes this process the reaper of its forked grandchildren (fleet
// workers outlive their killed parent for a moment) and installs the cleanup on fatal signals.
void init_cleanup();

// Processes the fatal-signal cleanup must SIGKILL (their group too, when they lead one).
void guard_process(pid_t pid);
void unguard_process(pid_t pid);

// A private directory for the generated files, under $TMPDIR or /var/tmp (not /tmp, which may be
// a tmpfs: its pages would be shmem, not the page-cache file pages the tool reports as "file").
class Scratch {
  public:
    Scratch();
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    // Writes `bytes` of pseudo-random content (so no page is all zeros or a duplicate of another),
    // flushed to disk so that background writeback does not disturb the timings.
    std::string make_file(const std::string& name, std::size_t bytes);
    // A path in the directory for files others create (removed at the end too, with -wal/-shm).
    std::string path_for(const std::string& name);
    const std::string& dir() const { return dir_; }

  private:
    std::string dir_;
    std::vector<std::string> files_;
};

// What a fleet's workers do once they have touched the file: wait (still), or keep moving as a
// data loader does: every 100 ms drop a random 1 MiB of their mapping of the file
// (MADV_DONTNEED), touch another random 1 MiB of it, and write 256 KiB of new anonymous memory
// (up to 64 MiB).
enum class Motion { still, moving };

// A forked process tree: `leader` maps `file` (if not empty) and touches every page, or forks
// `workers` children that each do so while the leader only waits. Ready when constructed.
class TargetTree {
  public:
    TargetTree(const std::string& file, int workers,
               std::chrono::seconds timeout = std::chrono::seconds(180))
        : TargetTree(file, workers, Motion::still, timeout) {}
    TargetTree(const std::string& file, int workers, Motion motion,
               std::chrono::seconds timeout = std::chrono::seconds(180));
    ~TargetTree(); // SIGKILLs the whole group and reaps it
    TargetTree(const TargetTree&) = delete;
    TargetTree& operator=(const TargetTree&) = delete;

    pid_t leader() const { return leader_; }
    // The name (comm) of the leader and its workers: "lltree-<leader pid>".
    std::string comm() const;
    int processes() const { return workers_ + 1; }

  private:
    void stop();
    pid_t leader_ = -1;
    int workers_ = 0;
};

// Fields of /proc/PID/stat needed here: start time (identity) and CPU time (clock ticks).
struct ProcStat {
    std::uint64_t start_ticks = 0;
    std::uint64_t utime_ticks = 0, stime_ticks = 0;
};
ProcStat read_proc_stat(pid_t pid); // throws SetupError when the process is gone

// Resident set of a process in KiB from /proc/PID/statm (for checking that a target is set up).
std::int64_t resident_kib(pid_t pid);

// The PIDs whose parent is `pid` (the fleet workers), by listing /proc.
std::vector<pid_t> children_of(pid_t pid);

} // namespace loaderlens::bench
