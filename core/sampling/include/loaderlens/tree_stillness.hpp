// SPDX-License-Identifier: MIT
// Whether a process tree stood still between two looks: no process was born or exited, and none
// moved its statm resident or shared pages or took a page fault (/proc/PID/stat fields 10 and
// 12; a copy-on-write break is a fault, and it moves the PSS of the process it shared the page
// with as well). While a tree stands still its PSS and its present pages of every file stand
// still too, except for what processes outside it do to shared pages; a look costs a pread of
// statm and of stat per process (a few µs), a smaps_rollup or pagemap walk ~11 µs per MiB.
// Each tier keeps its own (they look at different times).
#pragma once

#include "loaderlens/types.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

class TreeStillness {
  public:
    TreeStillness() = default;
    ~TreeStillness();
    TreeStillness(const TreeStillness&) = delete;
    TreeStillness& operator=(const TreeStillness&) = delete;

    // True when nothing moved since the previous look (false at the first, and when a process
    // could not be read).
    bool look(const std::vector<ProcessInfo>& live);
    // statm's resident pages of a process at the last look; -1 when it could not be read.
    std::int64_t resident_pages(const ProcessKey& key) const {
        auto it = states_.find(key);
        return it == states_.end() ? -1 : it->second.last.resident;
    }

    // statm's resident minus shared pages (RssAnon) at the last look; -1 when unreadable.
    std::int64_t anon_pages(const ProcessKey& key) const {
        auto it = states_.find(key);
        if (it == states_.end() || it->second.last.resident < 0) return -1;
        return it->second.last.resident - it->second.last.shared;
    }

    struct Movement {
        std::int64_t resident = -1, shared = -1; // statm pages; -1: unreadable
        std::uint64_t faults = 0;                // minor + major
        std::uint64_t major_faults = 0;          // of which major (a page read in: file or swap)
        bool operator==(const Movement&) const = default;
    };
    // A process's movement between the last two looks: resident pages and faults at the one
    // before (`before`) and at the last (`now`); empty for a process the look before did not see.
    struct Step {
        Movement before, now;
    };
    std::optional<Step> step(const ProcessKey& key) const {
        auto it = states_.find(key);
        if (it == states_.end() || !it->second.seen_before) return std::nullopt;
        return Step{it->second.before, it->second.last};
    }
    // Processes the last look found gone since the look before.
    int exited_last() const { return exited_last_; }

  private:
    struct State {
        int statm_fd = -1, stat_fd = -1;
        Movement before, last;
        bool seen_before = false;
    };
    Movement read(const ProcessInfo& info, State& state);

    std::map<ProcessKey, State> states_; // the tree at the previous look
    std::string buffer_;
    int exited_last_ = 0;
};

} // namespace loaderlens
