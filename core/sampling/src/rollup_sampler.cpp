// SPDX-License-Identifier: MIT
#include "loaderlens/rollup_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

RollupSampler::~RollupSampler() {
    for (auto& [key, state] : states_)
        if (state.rollup_fd >= 0) ::close(state.rollup_fd);
}

void RollupSampler::forget(const ProcessKey& key) {
    auto it = states_.find(key);
    if (it == states_.end()) return;
    if (it->second.rollup_fd >= 0) ::close(it->second.rollup_fd);
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
    // Only when kept readings are allowed: a full sweep needs no look.
    const bool still = max_age_ms_ > 0 && stillness_.look(live);
    read_last_ = 0;
    for (const ProcessInfo& info : live) {
        State& state = states_[info.key];
        if (still && state.has_reading && now_ms - state.read_ms < max_age_ms_) {
            RollupSample kept = state.reading;
            kept.age_ms = now_ms - state.read_ms;
            out.push_back(kept);
            continue;
        }
        ++read_last_;
        if (!read_rollup(info, state, problems)) continue;
        state.read_ms = now_ms;
        out.push_back(state.reading);
    }
}

} // namespace loaderlens
