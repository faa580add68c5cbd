// SPDX-License-Identifier: MIT
// Reads what the SLURM site applies (slurm_site.hpp) while the command runs, never before it: a
// slurmctld that does not answer costs the recording its SLURM meta, never the command's time.
#pragma once

#include "loaderlens/slurm_site.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens {

// How long each scontrol may take before it is killed, and how much of its output is read.
inline constexpr std::chrono::seconds scontrol_time_limit{5};
inline constexpr std::size_t scontrol_max_output = 1 << 20;

// A program run to completion with a time limit: its own process group (SIGKILLed whole at the
// limit, then reaped), stdin and stderr /dev/null, LC_ALL=C, at most `max_output` bytes read.
struct BoundedRun {
    enum class Outcome { exited, killed_by_signal, timed_out, too_much_output, not_started };
    Outcome outcome = Outcome::not_started;
    int code = 0; // exit status, signal number, or errno (not_started)
    std::string output;
};
BoundedRun run_bounded(const std::string& executable, const std::vector<std::string>& args,
                       std::chrono::milliseconds limit, std::size_t max_output);

// `name` searched in `search_path` (PATH's form), as execvp would; nothing when not found.
std::optional<std::string> find_executable(const std::string& name, const std::string& search_path);

// A configuration file read whole (at most 1 MiB): a regular file, opened without blocking (a
// FIFO or a device is refused, never waited on); a symbolic link is followed only when root or
// this user owns it (an administrator's or one's own, not one another user planted). Sets
// `problem` (one line) when it returns nothing.
std::optional<std::string> read_config_file(const std::string& path, std::string& problem);

// What read_slurm_site needs from the environment (taken before any fork).
struct SlurmEnvironment {
    std::string job_id, step_id; // SLURM_JOB_ID, SLURM_STEP_ID ("" when unset)
    std::optional<std::string> slurm_conf;
    std::string search_path; // PATH
    static SlurmEnvironment from_process();
};

// Runs scontrol (show config, then show step J.S) or reads the SLURM_CONF file; blocks for up to
// twice scontrol_time_limit.
SlurmSiteReading read_slurm_site(const SlurmEnvironment& environment);

// read_slurm_site in a process that is not a descendant of the recorder (forked twice: the
// recorded tree is the recorder's descendants, and the recorder reaps every child it has), its
// meta rows coming back through a pipe.
class SlurmSiteReader {
  public:
    using Rows = std::vector<std::pair<std::string, std::string>>;
    // Inside a SLURM job (SLURM_JOB_ID set) the reader started; outside, nothing is run. Call it
    // while the process has one thread and before PR_SET_CHILD_SUBREAPER (else the reading
    // process would become the recorder's own child again).
    static std::unique_ptr<SlurmSiteReader> start_in_job();
    ~SlurmSiteReader();
    SlurmSiteReader(const SlurmSiteReader&) = delete;
    SlurmSiteReader& operator=(const SlurmSiteReader&) = delete;

    // Whether the rows were handed out already (by poll, wait or now).
    bool taken() const { return taken_; }
    // The rows once the answer is in (once only), without waiting.
    std::optional<Rows> poll();
    // The rows, waiting at most until the reader's own limits have passed (with a margin).
    Rows wait();
    // The rows now: the answer if it is in, else unavailable rows saying why (`reason`).
    Rows now(const std::string& reason);

  private:
    explicit SlurmSiteReader(int fd) : fd_(fd) {}
    bool read_available(); // true when the answer is complete (or can never be)
    Rows rows_or(const std::string& reason);

    int fd_ = -1;
    std::string received_;
    bool ended_ = false, taken_ = false;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

} // namespace loaderlens
