// SPDX-License-Identifier: MIT
// Which processes of the tree are data-loader workers. A worker is
//  - a process whose comm or command line matches --worker-match, when it is given (and then
//    nothing else is); otherwise
//  - a process named pt_data_worker (PyTorch names its workers so in newer versions), or
//  - a child of a loader process that was forked without exec (the fork start method), or
//  - a child of a loader process running multiprocessing's spawn code (spawn start method).
// A loader process is main, a forkserver started by a loader process (its forked children are
// the workers of the forkserver start method), or a program a shell started when main is that
// shell (`record -- bash train.sh`: python is the loader, bash only passes through). Anything
// else is a helper: a child that exec'd another program (subprocess: a metrics sampler, wandb,
// tensorboard, compile workers), resource_tracker, the forkserver itself.
#pragma once

#include "loaderlens/types.hpp"
#include "loaderlens/worker_match.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace loaderlens {

// Where an address space starts (/proc/PID/stat fields 28, 47, 48, 50): equal in a parent and a
// child forked from it without exec; an exec builds a new one, placed elsewhere by ASLR.
struct AddressLayout {
    std::uint64_t start_stack = 0, start_brk = 0, arg_start = 0, env_start = 0;
    // The kernel shows zeros without ptrace read access (another user's process).
    bool readable() const { return arg_start != 0 || start_stack != 0; }
    friend bool operator==(const AddressLayout&, const AddressLayout&) = default;
};

// What the rule looks at of one process.
struct ProcessFacts {
    pid_t pid = 0, ppid = 0;
    std::string comm, cmdline;
    AddressLayout layout;
};

class WorkerRule {
  public:
    // Throws std::invalid_argument for a worker_match that WorkerMatch::problem() refuses.
    WorkerRule(pid_t main_pid, const std::optional<std::string>& worker_match);

    // The facts of a live tree member by PID, or nothing outside the tree.
    using Lookup = std::function<std::optional<ProcessFacts>(pid_t)>;

    // main, worker or helper.
    Role role_of(const ProcessFacts& process, const Lookup& lookup) const;

  private:
    bool is_loader_process(const ProcessFacts& process, const Lookup& lookup, int depth) const;

    pid_t main_pid_;
    std::shared_ptr<const WorkerMatch> worker_match_;
};

// A child that still shares its parent's address space layout (forked, no exec since). Without
// access to the layouts, the same program with the same command line stands in for it.
bool forked_without_exec(const ProcessFacts& child, const ProcessFacts& parent);

} // namespace loaderlens
