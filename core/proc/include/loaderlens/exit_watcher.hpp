// SPDX-License-Identifier: MIT
// Exit statuses of processes that are not the recorder's children. DataLoader workers are
// children of main, which reaps them, often between two scans: neither a zombie is seen nor can
// the recorder wait for them. A pidfd opened when the tracker first sees a process keeps its exit
// status readable after another process reaped it (PIDFD_GET_INFO with PIDFD_INFO_EXIT, Linux
// 6.15). Older kernels (Debian 12's 6.1) fall back to what the tracker sees itself: a zombie's
// /proc/PID/stat field 52, or the subreaper's own wait; else the status was not seen.
//
// The same pidfds tell the tracker which members ended (a pidfd polls readable once its process
// is a zombie or reaped, Linux 5.3): one poll() per tick instead of a stat read per member.
#pragma once

#include "loaderlens/types.hpp"

#include <map>
#include <optional>
#include <poll.h>
#include <vector>

namespace loaderlens {

class ExitWatcher {
  public:
    // `use_pidfd` false forces the fallback (for tests, and to compare both on one kernel).
    // `poll_exits` false keeps no pidfd for polling (the tracker then reads every member's stat).
    explicit ExitWatcher(bool use_pidfd, bool poll_exits = false);
    ~ExitWatcher();
    ExitWatcher(const ExitWatcher&) = delete;
    ExitWatcher& operator=(const ExitWatcher&) = delete;

    // Whether exit statuses of non-children come from pidfds here.
    bool active() const { return active_; }
    // Whether `key` has a pidfd, so that exited() covers it.
    bool polled(const ProcessKey& key) const { return pidfds_.contains(key); }
    // The watched processes that ended (zombie or reaped) since they were watched.
    std::vector<ProcessKey> exited();
    // Starts watching a live process (a pidfd, one file descriptor while it lives).
    void watch(const ProcessKey& key);
    // The wait status of a process that is gone (reaped by anyone), if the kernel kept it; and
    // stops watching it.
    std::optional<int> take_exit_status(const ProcessKey& key);

    // Whether this kernel reports the exit status of a reaped process through a pidfd; probed
    // once with a child of our own.
    static bool kernel_supports_pidfd_exit_info();

  private:
    bool active_;
    bool poll_exits_;
    std::map<ProcessKey, int> pidfds_;
    std::vector<pollfd> polls_;
};

} // namespace loaderlens
