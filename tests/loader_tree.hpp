// SPDX-License-Identifier: MIT
// Test support for `ps` and the process list: a forked process tree shaped like a data loader,
// and what /proc says about a process, read directly (the oracle: no code under test).
#pragma once

#include "support.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens::test {

// A main forked by the test with `workers` children renamed pt_data_worker (prctl PR_SET_NAME,
// as PyTorch >= 2 names its DataLoader workers) and `helpers` children left as they are. Every
// process waits in pause() and dies with its parent (PR_SET_PDEATHSIG); the main is killed when
// the object goes.
class LoaderTree {
  public:
    LoaderTree(int workers, int helpers);
    pid_t main() const { return main_.pid(); }
    const std::vector<pid_t>& workers() const { return workers_; }
    const std::vector<pid_t>& helpers() const { return helpers_; }

  private:
    int report_fd_ = -1; // the children's records (before main_: its initializer sets it)
    ForkGuard main_;
    std::vector<pid_t> workers_, helpers_;
};

// /proc/PID/stat and /proc/PID/status, parsed here.
struct ProcFacts {
    std::string comm;
    char state = '?';
    pid_t ppid = 0;
    std::uint64_t start_ticks = 0, cpu_ticks = 0; // starttime; utime + stime
    uid_t effective_uid = 0;
    std::int64_t vm_rss_kb = -1; // -1: no VmRSS line (a zombie)
};
ProcFacts proc_facts(pid_t pid);

// The PIDs in /proc/PID/task/PID/children.
std::vector<pid_t> children_of(pid_t pid);

} // namespace loaderlens::test
