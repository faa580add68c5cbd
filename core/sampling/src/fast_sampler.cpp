// SPDX-License-Identifier: MIT
#include "loaderlens/fast_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

namespace {
const std::int64_t page_kb = sysconf(_SC_PAGESIZE) / 1024;

int open_proc(pid_t pid, const char* file) {
    std::string path = "/proc/" + std::to_string(pid) + "/" + file;
    return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}
} // namespace

FastSampler::~FastSampler() {
    for (auto& [key, state] : states_) {
        if (state.statm_fd >= 0) ::close(state.statm_fd);
        if (state.status_fd >= 0) ::close(state.status_fd);
    }
}

void FastSampler::forget(const ProcessKey& key) {
    auto it = states_.find(key);
    if (it == states_.end()) return;
    if (it->second.statm_fd >= 0) ::close(it->second.statm_fd);
    if (it->second.status_fd >= 0) ::close(it->second.status_fd);
    states_.erase(it);
}

void FastSampler::sample(const std::vector<ProcessInfo>& live, std::int64_t now_ms,
                         std::vector<FastSample>& out, Problems& problems) {
    for (const ProcessInfo& info : live) {
        auto [it, inserted] = states_.try_emplace(info.key);
        State& state = it->second;
        if (inserted) {
            state.statm_fd = open_proc(info.key.pid, "statm");
            state.status_fd = open_proc(info.key.pid, "status");
            if (state.statm_fd < 0 && errno != ENOENT && errno != ESRCH)
                problems.push_back({info.id, "fast", unavailable_reason("statm", errno)});
        }
        if (state.statm_fd < 0) continue;                        // gone before we could look
        if (pread_whole(state.statm_fd, buffer_) <= 0) continue; // exited since the tree scan
        auto statm = parse_statm(buffer_);
        // An exiting process whose memory is already torn down (or a zombie) reads as all zeros:
        // it has no figures any more, and a row of zeros would be a lie.
        if (!statm || statm->size_pages == 0) continue;

        FastSample sample;
        sample.process_id = info.id;
        sample.rss = statm->resident_pages * page_kb;
        const bool moved =
            statm->resident_pages != state.resident || statm->shared_pages != state.shared;
        if (state.status_fd >= 0 &&
            (moved || now_ms - state.status_read_ms >= status_max_age_ms_)) {
            if (pread_whole(state.status_fd, buffer_) > 0) {
                FastSample split;
                parse_status_memory(buffer_, split);
                state.split = split;
                state.status_read_ms = now_ms;
            }
        }
        state.resident = statm->resident_pages;
        state.shared = statm->shared_pages;
        // statm: resident = anon + file + shmem, shared = file + shmem (same kernel counters).
        sample.rss_anon = (statm->resident_pages - statm->shared_pages) * page_kb;
        sample.rss_file = state.split.rss_file;
        sample.rss_shmem = state.split.rss_shmem;
        sample.swap = state.split.swap;
        out.push_back(sample);
    }
}

} // namespace loaderlens
