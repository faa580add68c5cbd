// SPDX-License-Identifier: MIT
// Finds the tracked process tree every tick: the root and all its descendants (grandchildren too),
// with births, exits, roles and worker slots. Identity is (pid, start time): a reused PID is a new
// process.
//
// This kernel family may lack /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN), so the tracker
// lists /proc and keeps the parent of every PID it has seen: only PIDs that are new since the last
// tick, and members of the tree, have their /proc/PID/stat read again. A tick therefore costs one
// directory listing plus one small read per tree member, not one read per process on the machine.
// The listing's inode numbers tell a reused PID from the process seen before.
//
// A settled member (older than young_ms) is not read at every tick either: its pidfd, polled
// with all the others in one call, tells when it ends, and its stat is read again only then, or
// once per `settled_stat_ms` to catch a late rename (prctl) or a new parent. Young members, and
// every member when pidfds are missing or `poll_exits` is off, are read at every tick.
//
// Births come from the children lists of the members' main threads (/proc/PID/task/PID/children,
// kept open), so that a tick reads nothing of the processes outside the tree: on a busy machine
// the listing and the stat of every new PID there cost more than the members' own reads. The full
// listing runs once per `full_scan_ms` still, for children forked by another thread of a member
// (the list is per thread) and orphans re-parented to a member, and at every tick where the
// kernel has no children lists (CONFIG_PROC_CHILDREN) or `children_lists` is off.
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/exit_watcher.hpp"
#include "loaderlens/open_children_files.hpp"
#include "loaderlens/open_stat_files.hpp"
#include "loaderlens/types.hpp"
#include "loaderlens/worker_rule.hpp"
#include "loaderlens/worker_slots.hpp"

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace loaderlens {

struct TrackerOptions {
    pid_t scan_root = 0;                     // descendants of this PID are tracked
    bool track_scan_root = true;             // false when the scan root is the recorder itself
    pid_t main_pid = 0;                      // the process given the role `main`
    std::optional<std::string> worker_match; // POSIX ERE on comm or cmdline (WorkerMatch)
    bool pidfd_exit_status = true;           // false forces the zombie/wait fallback
    bool poll_exits = true;              // false forces a stat read of every member at each tick
    std::int64_t settled_stat_ms = 1000; // how often a settled member's stat is read anyway
    bool children_lists = true;          // false forces the full listing at every tick
    std::int64_t full_scan_ms = 1000;    // how often the full listing runs with children lists
};

struct TreeChanges {
    std::vector<ProcessInfo> born;
    std::vector<ProcessInfo> exited;  // with exit_ms (and exit_status when known)
    std::vector<ProcessInfo> renamed; // comm/cmdline/role changed (exec, prctl)
    bool empty() const { return born.empty() && exited.empty() && renamed.empty(); }
};

class TreeTracker {
  public:
    TreeTracker(TrackerOptions options, const RecordingClock& clock);

    TreeChanges scan();
    // Live processes in birth order.
    std::vector<ProcessInfo> live() const;
    // The launcher reaped a child (or an orphan reparented to it): keep its status for the exit.
    void note_exit_status(pid_t pid, int wait_status);
    std::size_t processes_on_machine() const { return known_.size(); }
    // Whether births come from children lists (else from the listing at every tick).
    bool uses_children_lists() const { return children_lists_; }

  private:
    struct Known {
        std::uint64_t start_ticks = 0;
        pid_t ppid = 0;
        ino_t inode = 0; // of /proc/PID: a new process under a reused PID gets a new one
        std::int64_t stat_due_ms = 0; // when a settled member's stat is read again
    };
    struct Listed {
        pid_t pid;
        ino_t inode;
    };
    // How long after birth a process's command line is re-read to catch an exec.
    static constexpr std::int64_t young_ms = 3000;
    std::optional<ProcessFacts> facts_of(pid_t pid) const;
    ProcessFacts facts_of(const ProcessInfo& info) const;
    Role role_by_rule(const ProcessInfo& info) const;
    void assign_role(ProcessInfo& info);
    void reassign_role(ProcessInfo& info);
    std::vector<Listed> list_proc() const;
    void read_listing(std::int64_t now, const std::set<pid_t>& ended,
                      std::unordered_map<pid_t, StatFields>& fresh);
    void read_members(std::int64_t now, const std::set<pid_t>& ended,
                      std::unordered_map<pid_t, StatFields>& fresh);
    bool stat_due(pid_t pid, std::int64_t now, const std::set<pid_t>& ended) const;
    std::int64_t next_due(pid_t pid, std::int64_t now, std::int64_t due_ms,
                          const std::set<pid_t>& ended) const;
    std::vector<pid_t> newborn_from_children(std::unordered_map<pid_t, StatFields>& fresh);
    std::vector<pid_t> newborn_from_listing() const;

    TrackerOptions options_;
    const RecordingClock& clock_;
    WorkerRule rule_;
    std::unordered_map<pid_t, AddressLayout> layouts_; // of live members, read every tick
    std::unordered_map<pid_t, Known> known_;
    std::map<ProcessKey, ProcessInfo> live_;
    std::unordered_map<pid_t, int> reaped_status_;
    OpenStatFiles member_stats_;
    WorkerSlots slots_;
    ExitWatcher exits_;
    OpenChildrenFiles children_;
    bool children_lists_;
    std::int64_t next_full_scan_ms_ = std::numeric_limits<std::int64_t>::min();
    std::int64_t next_id_ = 1;
};

// The command line of a process with NULs turned into spaces (empty for kernel threads or errors).
std::string read_cmdline(pid_t pid);

} // namespace loaderlens
