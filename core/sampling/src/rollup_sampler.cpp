// SPDX-License-Identifier: MIT
#include "loaderlens/rollup_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

namespace {
int open_proc(pid_t pid, const char* file) {
    return ::open(("/proc/" + std::to_string(pid) + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
}
} // namespace

RollupSampler::~RollupSampler() {
    for (auto& [key, state] : states_)
        for (int fd : {state.rollup_fd, state.statm_fd, state.stat_fd})
            if (fd >= 0) ::close(fd);
}

void RollupSampler::forget(const ProcessKey& key) {
    auto it = states_.find(key);
    if (it == states_.end()) return;
    for (int fd : {it->second.rollup_fd, it->second.statm_fd, it->second.stat_fd})
        if (fd >= 0) ::close(fd);
    states_.erase(it);
}

int RollupSampler::open_rollup(const ProcessInfo& info, Problems& problems) {
    const std::string dir = "/proc/" + std::to_string(info.key.pid);
    int fd = ::open((dir + "/smaps_rollup").c_str(), O_RDONLY | O_CLOEXEC);
    // ENOENT while /proc/PID still exists means a kernel older than 4.14.
    if (fd < 0 && (errno != ENOENT || access(dir.c_str(), F_OK) == 0))
        problems.push_back({info.id, "rollup", unavailable_reason("smaps_rollup", errno)});
    return fd;
}

RollupSampler::Movement RollupSampler::movement(const ProcessInfo& info, State& state) {
    if (state.statm_fd < 0) state.statm_fd = open_proc(info.key.pid, "statm");
    if (state.stat_fd < 0) state.stat_fd = open_proc(info.key.pid, "stat");
    Movement m;
    if (state.statm_fd < 0 || state.stat_fd < 0) return m;
    if (pread_whole(state.statm_fd, buffer_) <= 0) return m;
    const auto statm = parse_statm(buffer_);
    if (pread_whole(state.stat_fd, buffer_) <= 0) return m;
    const auto stat = parse_stat(buffer_);
    if (!statm || !stat) return m;
    m.resident = statm->resident_pages;
    m.shared = statm->shared_pages;
    m.faults = stat->minor_faults + stat->major_faults;
    return m;
}

bool RollupSampler::read_rollup(const ProcessInfo& info, State& state, Problems& problems) {
    if (state.rollup_fd < 0) state.rollup_fd = open_rollup(info, problems);
    if (state.rollup_fd < 0) return false;
    long n = pread_whole(state.rollup_fd, buffer_);
    if (n <= 0) {
        // The open file pins the address space the process had at open(): after an exec it
        // reads as empty or ESRCH although the process lives on. Open it again once.
        ::close(state.rollup_fd);
        state.rollup_fd = open_rollup(info, problems);
        if (state.rollup_fd < 0) return false;
        n = pread_whole(state.rollup_fd, buffer_);
    }
    if (n < 0 && n != -ESRCH && n != -ENOENT)
        problems.push_back(
            {info.id, "rollup", unavailable_reason("smaps_rollup", static_cast<int>(-n))});
    // A zombie or exited process reads as empty: no sample rather than zeros.
    if (n <= 0) return false;
    RollupSample sample;
    sample.process_id = info.id;
    parse_smaps_rollup(buffer_, sample);
    if (!sample.rss) return false;
    if (!sample.pss_anon)
        problems.push_back({info.id, "rollup",
                            "Pss_Anon/Pss_File/Pss_Shmem: not in smaps_rollup before Linux 5.3"});
    state.reading = sample;
    state.has_reading = true;
    return true;
}

void RollupSampler::sample(const std::vector<ProcessInfo>& live, std::vector<RollupSample>& out,
                           Problems& problems) {
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count();
    // First every process's movement, then the decisions: one process's move can move the
    // others' PSS (a copy-on-write break in a worker makes the page private to main, a fault on a
    // shared file page divides it once more), so any move has every process read.
    std::vector<ProcessKey> tree;
    bool any_moved = false;
    for (const ProcessInfo& info : live) {
        tree.push_back(info.key);
        State& state = states_[info.key];
        state.now = movement(info, state);
        if (!(state.now == state.at_last_run) || state.now.resident < 0) any_moved = true;
    }
    std::sort(tree.begin(), tree.end());
    const bool tree_changed = tree != last_tree_;
    last_tree_ = std::move(tree);

    read_last_ = 0;
    for (const ProcessInfo& info : live) {
        State& state = states_[info.key];
        const bool keep = max_age_ms_ > 0 && state.has_reading && !tree_changed && !any_moved &&
                          state.now == state.at_reading && now_ms - state.read_ms < max_age_ms_;
        state.at_last_run = state.now;
        if (keep) {
            RollupSample kept = state.reading;
            kept.age_ms = now_ms - state.read_ms;
            out.push_back(kept);
            continue;
        }
        ++read_last_;
        if (!read_rollup(info, state, problems)) continue;
        // The movement read before the walk: a page that moves during the walk moves it again.
        state.at_reading = state.now;
        state.read_ms = now_ms;
        out.push_back(state.reading);
    }
}

} // namespace loaderlens
