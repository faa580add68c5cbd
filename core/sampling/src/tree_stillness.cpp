// SPDX-License-Identifier: MIT
#include "loaderlens/tree_stillness.hpp"

#include "loaderlens/proc_text.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

namespace {
int open_proc(pid_t pid, const char* file) {
    return ::open(("/proc/" + std::to_string(pid) + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
}
void close_state(int statm_fd, int stat_fd) {
    for (int fd : {statm_fd, stat_fd})
        if (fd >= 0) ::close(fd);
}
} // namespace

TreeStillness::~TreeStillness() {
    for (auto& [key, state] : states_)
        close_state(state.statm_fd, state.stat_fd);
}

TreeStillness::Movement TreeStillness::read(const ProcessInfo& info, State& state) {
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
    m.major_faults = stat->major_faults;
    return m;
}

bool TreeStillness::look(const std::vector<ProcessInfo>& live) {
    bool still = !states_.empty() && states_.size() == live.size();
    std::map<ProcessKey, State> now;
    for (const ProcessInfo& info : live) {
        State state;
        if (auto it = states_.find(info.key); it != states_.end()) {
            state = it->second;
            states_.erase(it); // its descriptors move to `now`
            state.seen_before = true;
        } else {
            still = false; // born since the last look
        }
        const Movement m = read(info, state);
        if (m.resident < 0 || !(m == state.last)) still = false;
        state.before = state.last;
        state.last = m;
        now.emplace(info.key, state);
    }
    exited_last_ = static_cast<int>(states_.size());
    for (auto& [key, state] : states_) // exited since the last look
        close_state(state.statm_fd, state.stat_fd);
    states_ = std::move(now);
    return still;
}

} // namespace loaderlens
