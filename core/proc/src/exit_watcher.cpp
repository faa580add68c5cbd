// SPDX-License-Identifier: MIT
#include "loaderlens/exit_watcher.hpp"

#include <cstdint>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace loaderlens {

namespace {

// From <linux/pidfd.h> of Linux 6.15; Debian 12's kernel headers (6.1) do not have them. The
// structure is extensible: the kernel reads its size from the ioctl number, and 64 bytes
// (PIDFD_INFO_SIZE_VER0) already hold exit_code.
struct PidfdInfo {
    std::uint64_t mask, cgroupid;
    std::uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    std::int32_t exit_code;
};
static_assert(sizeof(PidfdInfo) == 64);
constexpr unsigned long pidfd_get_info = _IOWR(0xFF, 11, PidfdInfo);
constexpr std::uint64_t pidfd_info_exit = 1u << 3;
constexpr long sys_pidfd_open = 434; // x86-64 and the generic table, since Linux 5.3

int pidfd_open(pid_t pid) {
    return static_cast<int>(syscall(sys_pidfd_open, pid, 0));
}

std::optional<int> exit_status_of(int pidfd) {
    PidfdInfo info{};
    info.mask = pidfd_info_exit;
    if (ioctl(pidfd, pidfd_get_info, &info) != 0) return std::nullopt;
    if (!(info.mask & pidfd_info_exit)) return std::nullopt; // not reaped yet, or not kept
    return info.exit_code;
}

} // namespace

bool ExitWatcher::kernel_supports_pidfd_exit_info() {
    static const bool supported = [] {
        const pid_t child = fork();
        if (child < 0) return false;
        if (child == 0) _exit(42);
        const int pidfd = pidfd_open(child); // a zombie still has a pidfd
        int status = 0;
        waitpid(child, &status, 0);
        if (pidfd < 0) return false;
        const auto reported = exit_status_of(pidfd);
        close(pidfd);
        return reported && *reported == status;
    }();
    return supported;
}

ExitWatcher::ExitWatcher(bool use_pidfd, bool poll_exits)
    : active_(use_pidfd && kernel_supports_pidfd_exit_info()), poll_exits_(poll_exits) {}

ExitWatcher::~ExitWatcher() {
    for (const auto& [key, fd] : pidfds_)
        close(fd);
}

void ExitWatcher::watch(const ProcessKey& key) {
    if ((!active_ && !poll_exits_) || pidfds_.contains(key)) return;
    const int fd = pidfd_open(key.pid);
    if (fd >= 0) pidfds_.emplace(key, fd);
}

std::optional<int> ExitWatcher::take_exit_status(const ProcessKey& key) {
    auto found = pidfds_.find(key);
    if (found == pidfds_.end()) return std::nullopt;
    auto status = active_ ? exit_status_of(found->second) : std::nullopt;
    close(found->second);
    pidfds_.erase(found);
    return status;
}

std::vector<ProcessKey> ExitWatcher::exited() {
    std::vector<ProcessKey> ended;
    polls_.clear();
    for (const auto& [key, fd] : pidfds_)
        polls_.push_back({fd, POLLIN, 0});
    if (polls_.empty() || ::poll(polls_.data(), polls_.size(), 0) <= 0) return ended;
    auto it = pidfds_.begin();
    for (const pollfd& polled : polls_) {
        // POLLHUP or POLLERR too: nothing more will come from it, read its stat to know.
        if (polled.revents != 0) ended.push_back(it->first);
        ++it;
    }
    return ended;
}

} // namespace loaderlens
