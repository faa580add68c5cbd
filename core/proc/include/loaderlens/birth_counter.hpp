// SPDX-License-Identifier: MIT
// Counts the processes born in the tree that no scan saw: a process that is born and exits
// between two scans of /proc leaves no trace there. The kernel's process events (the netlink
// proc connector) report every fork and exit on the machine as they happen; the counter keeps the
// tree's members up to date from them, so that a fork whose parent is in the tree (or was born in
// it since) is a birth in the tree, and one that exits before any scan saw it is a birth missed.
// Subscribing needs CAP_NET_ADMIN (root) before Linux 6.6, and the events reach only the initial
// network and PID namespaces; elsewhere the count is unavailable, with the reason
// (docs/recording.md, "Processes missed").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace loaderlens {

struct BirthCount {
    std::int64_t born = 0;    // processes (not threads) born in the tree while counted
    std::int64_t missed = 0;  // of them, exited before a scan saw them
    bool lower_bound = false; // events were lost (the socket's buffer overflowed): at least
};

class BirthCounter {
  public:
    BirthCounter(); // subscribes; see unavailable()
    ~BirthCounter();
    BirthCounter(const BirthCounter&) = delete;
    BirthCounter& operator=(const BirthCounter&) = delete;

    // Why nothing is counted ("" while counting).
    const std::string& unavailable() const { return problem_; }
    // Reads every event queued since the last call; `members`: the tree as the last scan saw
    // it (added to what the events taught). Returns how many births in the tree arrived: a
    // burst the caller may want to follow at its fastest rate.
    int drain(const std::vector<pid_t>& members);
    // The scan saw these processes (all of the tree's live ones).
    void seen(const std::vector<pid_t>& live);
    BirthCount count() const { return count_; }

  private:
    void fork_event(pid_t parent, pid_t child);
    void exit_event(pid_t pid);

    int socket_ = -1;
    std::string problem_;
    std::unordered_set<pid_t> tree_;   // live members known from scans and events
    std::unordered_set<pid_t> unseen_; // born in the tree, not seen by a scan yet
    std::unordered_set<pid_t> seen_;   // live members some scan saw
    BirthCount count_;
    int births_this_drain_ = 0;
    // 64 KiB for the messages of one recv (on the heap: a static thread_local one made every
    // thread's static TLS 64 KiB larger, and pthread_create of a 64 KiB stack failed).
    std::vector<std::uint64_t> buffer_ = std::vector<std::uint64_t>(8 * 1024);
    std::size_t buffer_bytes() const { return buffer_.size() * sizeof(std::uint64_t); }
};

} // namespace loaderlens
