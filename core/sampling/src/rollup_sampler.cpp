// SPDX-License-Identifier: MIT
#include "loaderlens/rollup_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

RollupSampler::~RollupSampler() {
    for (auto& [key, fd] : fds_)
        if (fd >= 0) ::close(fd);
}

void RollupSampler::forget(const ProcessKey& key) {
    auto it = fds_.find(key);
    if (it == fds_.end()) return;
    if (it->second >= 0) ::close(it->second);
    fds_.erase(it);
}

int RollupSampler::open_rollup(const ProcessInfo& info, Problems& problems) {
    const std::string dir = "/proc/" + std::to_string(info.key.pid);
    int fd = ::open((dir + "/smaps_rollup").c_str(), O_RDONLY | O_CLOEXEC);
    // ENOENT while /proc/PID still exists means a kernel older than 4.14.
    if (fd < 0 && (errno != ENOENT || access(dir.c_str(), F_OK) == 0))
        problems.push_back({info.id, "rollup", unavailable_reason("smaps_rollup", errno)});
    return fd;
}

void RollupSampler::sample(const std::vector<ProcessInfo>& live, std::vector<RollupSample>& out,
                           Problems& problems) {
    for (const ProcessInfo& info : live) {
        auto [it, inserted] = fds_.try_emplace(info.key, -1);
        if (inserted) it->second = open_rollup(info, problems);
        if (it->second < 0) continue;
        long n = pread_whole(it->second, buffer_);
        if (n <= 0) {
            // The open file pins the address space the process had at open(): after an exec
            // it reads as empty or ESRCH although the process lives on. Open it again once.
            ::close(it->second);
            it->second = open_rollup(info, problems);
            if (it->second < 0) continue;
            n = pread_whole(it->second, buffer_);
        }
        if (n < 0 && n != -ESRCH && n != -ENOENT)
            problems.push_back(
                {info.id, "rollup", unavailable_reason("smaps_rollup", static_cast<int>(-n))});
        // A zombie or exited process reads as empty: no sample rather than zeros.
        if (n <= 0) continue;
        RollupSample sample;
        sample.process_id = info.id;
        parse_smaps_rollup(buffer_, sample);
        if (!sample.rss) continue;
        if (!sample.pss_anon)
            problems.push_back(
                {info.id, "rollup",
                 "Pss_Anon/Pss_File/Pss_Shmem: not in smaps_rollup before Linux 5.3"});
        out.push_back(sample);
    }
}

} // namespace loaderlens
