// SPDX-License-Identifier: MIT
#include "loaderlens/worker_rule.hpp"

#include <array>

namespace loaderlens {

namespace {

// Processes PyTorch and multiprocessing start beside the workers, by their command lines.
const std::regex& helper_pattern() {
    static const std::regex pattern("resource_tracker|semaphore_tracker|forkserver|"
                                    "multiprocessing\\.managers|torch_shm_manager");
    return pattern;
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
    if (worker_match) worker_match_.emplace(*worker_match);
}

bool WorkerRule::is_loader_process(const ProcessFacts& process, const Lookup& lookup,
                                   int depth) const {
    if (process.pid == main_pid_) return true;
    if (depth >= max_depth) return false;
    auto parent = lookup(process.ppid);
    if (!parent || !is_loader_process(*parent, lookup, depth + 1)) return false;
    if (is_forkserver(process)) return true;
    return is_shell(*parent) && !is_shell(process) && !forked_without_exec(process, *parent) &&
           !std::regex_search(process.cmdline, helper_pattern());
}

Role WorkerRule::role_of(const ProcessFacts& process, const Lookup& lookup) const {
    if (process.pid == main_pid_) return Role::main;
    if (worker_match_)
        return std::regex_search(process.comm, *worker_match_) ||
                       std::regex_search(process.cmdline, *worker_match_)
                   ? Role::worker
                   : Role::helper;
    if (process.comm == "pt_data_worker") return Role::worker;
    auto parent = lookup(process.ppid);
    if (!parent || is_shell(*parent) || !is_loader_process(*parent, lookup, 0)) return Role::helper;
    // Before the helper pattern: a forkserver's forked workers carry the forkserver's argv.
    if (forked_without_exec(process, *parent)) return Role::worker;
    if (std::regex_search(process.cmdline, helper_pattern())) return Role::helper;
    return runs_spawn_code(process) ? Role::worker : Role::helper;
}

} // namespace loaderlens
