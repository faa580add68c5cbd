// SPDX-License-Identifier: MIT
#include "loaderlens/worker_rule.hpp"

#include <algorithm>
#include <array>

namespace loaderlens {

namespace {

// Processes PyTorch and multiprocessing start beside the workers, by their command lines.
bool names_a_helper(const std::string& cmdline) {
    static const std::array<std::string_view, 5> helpers{"resource_tracker", "semaphore_tracker",
                                                         "forkserver", "multiprocessing.managers",
                                                         "torch_shm_manager"};
    return std::any_of(helpers.begin(), helpers.end(), [&](std::string_view helper) {
        return cmdline.find(helper) != std::string::npos;
    });
}

bool is_forkserver(const ProcessFacts& process) {
    return process.cmdline.find("multiprocessing.forkserver") != std::string::npos;
}

// `python -c 'from multiprocessing.spawn import spawn_main; ...' --multiprocessing-fork`
bool runs_spawn_code(const ProcessFacts& process) {
    return process.cmdline.find("multiprocessing.spawn") != std::string::npos ||
           process.cmdline.find("--multiprocessing-fork") != std::string::npos;
}

bool is_shell(const ProcessFacts& process) {
    static const std::array<const char*, 8> shells{"sh",  "bash", "dash", "zsh",
                                                   "ksh", "mksh", "fish", "busybox"};
    for (const char* shell : shells)
        if (process.comm == shell) return true;
    return false;
}

// Deep enough for shell -> shell -> python -> forkserver; a cycle in stale PIDs cannot loop.
constexpr int max_depth = 8;

} // namespace

bool forked_without_exec(const ProcessFacts& child, const ProcessFacts& parent) {
    if (child.layout.readable() && parent.layout.readable()) return child.layout == parent.layout;
    return child.comm == parent.comm && child.cmdline == parent.cmdline;
}

WorkerRule::WorkerRule(pid_t main_pid, const std::optional<std::string>& worker_match)
    : main_pid_(main_pid) {
    if (worker_match) worker_match_ = std::make_shared<const WorkerMatch>(*worker_match);
}

bool WorkerRule::is_loader_process(const ProcessFacts& process, const Lookup& lookup,
                                   int depth) const {
    if (process.pid == main_pid_) return true;
    if (depth >= max_depth) return false;
    auto parent = lookup(process.ppid);
    if (!parent || !is_loader_process(*parent, lookup, depth + 1)) return false;
    if (is_forkserver(process)) return true;
    return is_shell(*parent) && !is_shell(process) && !forked_without_exec(process, *parent) &&
           !names_a_helper(process.cmdline);
}

Role WorkerRule::role_of(const ProcessFacts& process, const Lookup& lookup) const {
    if (process.pid == main_pid_) return Role::main;
    if (worker_match_)
        return worker_match_->matches(process.comm) || worker_match_->matches(process.cmdline)
                   ? Role::worker
                   : Role::helper;
    if (process.comm == "pt_data_worker") return Role::worker;
    auto parent = lookup(process.ppid);
    if (!parent || is_shell(*parent) || !is_loader_process(*parent, lookup, 0)) return Role::helper;
    // Before the helper pattern: a forkserver's forked workers carry the forkserver's argv.
    if (forked_without_exec(process, *parent)) return Role::worker;
    if (names_a_helper(process.cmdline)) return Role::helper;
    return runs_spawn_code(process) ? Role::worker : Role::helper;
}

} // namespace loaderlens
