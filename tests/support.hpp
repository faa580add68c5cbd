// SPDX-License-Identifier: MIT
// Test support: real processes (the test workload, the CLI) and temporary files.
#pragma once

#include "loaderlens/tree_tracker.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens::test {

// A directory removed with everything in it when the object goes.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

// Writes `bytes` of non-zero content (so no page can be the shared zero page).
void make_file(const std::string& path, std::size_t bytes);

// A child process with its stdout on a pipe; killed (whole process group) when the object goes.
class Child {
  public:
    Child(const std::vector<std::string>& argv, bool own_process_group = true);
    ~Child();
    pid_t pid() const { return pid_; }
    // Waits for a stdout line that starts with `prefix`; false on timeout or EOF.
    bool wait_for_line(const std::string& prefix, std::chrono::milliseconds timeout);
    // Waits for the exit; returns the wait status, or nullopt on timeout.
    std::optional<int> wait(std::chrono::milliseconds timeout);
    const std::string& output() const { return output_; }

  private:
    pid_t pid_ = -1;
    int stdout_fd_ = -1;
    bool own_process_group_ = true;
    bool reaped_ = false;
    std::optional<std::string> recording_; // what it writes, if it is a recording command
    std::string output_;
    std::size_t consumed_ = 0;
};

struct RunResult {
    int exit_code = -1;
    std::string out, err;
};
// Runs a command to completion, capturing stdout and stderr.
RunResult run(const std::vector<std::string>& argv,
              std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The lines of a text (a command's output), without their newlines.
std::vector<std::string> lines_of(const std::string& text);

// Whether `text` (a command's message) names `name`: as it is, or with its bytes that are not
// ASCII shown otherwise (each ill-formed part as U+FFFD, a C1 control as \u00NN: one_line()).
bool mentions(const std::string& text, const std::string& name);

// Runs one SQL statement on a database through Python's sqlite3 (not the code under test) and
// requires success: how the tests damage or edit a recording.
void sqlite_exec(const std::string& db, const std::string& sql);
// The rows of a query on a database, read the same way (an oracle's figures): each value as
// Python's str() gives it ("None" for NULL).
std::vector<std::vector<std::string>> sqlite_rows(const std::string& db, const std::string& sql);

std::string cli_path();
std::string workload_path();
// The argv of the test workload over `file`.
std::vector<std::string> workload(const std::string& file, int workers, long anon_mib,
                                  int generations = 1, long hold_ms = 60'000);

// A process forked by the test itself: killed (SIGKILL) and reaped when the guard goes unless the
// test reaped it, so that a failing check never leaves a paused child behind.
class ForkGuard {
  public:
    explicit ForkGuard(pid_t pid) : pid_(pid) {}
    ~ForkGuard();
    ForkGuard(const ForkGuard&) = delete;
    ForkGuard& operator=(const ForkGuard&) = delete;
    pid_t pid() const { return pid_; }
    // Sends `signal` unless already reaped, then reaps; returns the wait status (-1 if reaped
    // before).
    int kill_and_reap(int signal = SIGKILL);
    // Waits for the exit the test caused; returns the wait status.
    int reap();

  private:
    pid_t pid_;
    bool reaped_ = false;
};

// Forks a child that waits in pause() until it is killed (and dies with the calling thread).
pid_t fork_paused();
// The same, as user nobody (uid and gid 65534; needs root): returns once the child is nobody.
pid_t fork_paused_nobody();

// Tracks the tree below `root` (root included) until `expected` processes are live.
std::vector<ProcessInfo> track_until(TreeTracker& tracker, std::size_t expected,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10));

constexpr std::int64_t mib_kb = 1024;

} // namespace loaderlens::test

#include <ostream>
namespace loaderlens { // so that Boost.Test can print them in failure messages
inline std::ostream& operator<<(std::ostream& out, Role role) {
    return out << to_string(role);
}
inline std::ostream& operator<<(std::ostream& out, MappingKind kind) {
    return out << to_string(kind);
}
} // namespace loaderlens
