// SPDX-License-Identifier: MIT
#include "loaderlens/marker_watch.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace loaderlens {

MarkerWatch::MarkerWatch(const Sidecar& sidecar, bool enabled) {
    interrupt_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!enabled) {
        problem_ = "turned off";
        return;
    }
    if (sidecar.directory_fd >= 0)
        directory_fd_ = ::fcntl(sidecar.directory_fd, F_DUPFD_CLOEXEC, 0);
    if (directory_fd_ < 0) {
        problem_ = "no directory to watch";
        return;
    }
    const std::string directory = "/proc/self/fd/" + std::to_string(directory_fd_);
    name_ = sidecar.name;
    inotify_fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (inotify_fd_ < 0) {
        problem_ = std::string("inotify: ") + std::strerror(errno);
        return;
    }
    if (sidecar.fd >= 0) { // the file record made, whatever its name becomes
        own_file_ = true;
        path_ = "/proc/self/fd/" + std::to_string(sidecar.fd);
        watch_file();
        return;
    }
    path_ = directory + "/" + name_;
    directory_watch_ =
        ::inotify_add_watch(inotify_fd_, directory.c_str(), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    if (directory_watch_ < 0) {
        problem_ = "inotify on " + sidecar.path + "'s directory: " + std::strerror(errno);
        ::close(inotify_fd_);
        inotify_fd_ = -1;
        return;
    }
    watch_file();
}

void MarkerWatch::watch_file() {
    // Adding a watch on the inode the path names now; the kernel drops the watch of a removed
    // inode by itself (IN_IGNORED). ENOENT: not there yet, the directory watch will say when. A
    // name the user gave is watched without following it (a link is watched as the link, never
    // its target); the file record made is reached through its descriptor's /proc/self/fd link,
    // which must be followed (IN_DONT_FOLLOW would watch the link itself: no event ever).
    const std::uint32_t follow = own_file_ ? 0u : static_cast<std::uint32_t>(IN_DONT_FOLLOW);
    file_watch_ =
        ::inotify_add_watch(inotify_fd_, path_.c_str(), IN_MODIFY | IN_CLOSE_WRITE | follow);
}

MarkerWatch::~MarkerWatch() {
    for (int fd : {inotify_fd_, interrupt_fd_, directory_fd_})
        if (fd >= 0) ::close(fd);
}

bool MarkerWatch::drain_events() {
    alignas(inotify_event) char buffer[4096];
    bool about_the_file = false;
    for (;;) {
        const ssize_t n = ::read(inotify_fd_, buffer, sizeof buffer);
        if (n <= 0) return about_the_file; // EAGAIN: all read
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            // IN_Q_OVERFLOW: events were lost, one of them may have been ours.
            if (event->mask & IN_Q_OVERFLOW) about_the_file = true;
            if (event->wd == file_watch_ && (event->mask & (IN_MODIFY | IN_CLOSE_WRITE)))
                about_the_file = true;
            if (event->wd == directory_watch_ && event->len > 0 &&
                name_ == static_cast<const char*>(event->name)) {
                watch_file(); // created or renamed into place: a new inode to follow
                about_the_file = true;
            }
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
    }
}

MarkerWatch::Wake MarkerWatch::wait(std::int64_t timeout_ms) {
    using Clock = std::chrono::steady_clock;
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(std::max<std::int64_t>(0, timeout_ms));
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd fds[2] = {{interrupt_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
        const int ready = ::poll(fds, inotify_fd_ >= 0 ? 2 : 1,
                                 static_cast<int>(std::max<std::int64_t>(0, left)));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return Wake::timeout;
        if (fds[0].revents & POLLIN) {
            std::uint64_t count = 0;
            [[maybe_unused]] auto r = ::read(interrupt_fd_, &count, sizeof count);
            return Wake::interrupted;
        }
        if (drain_events()) return Wake::file_changed;
        if (left <= 0) return Wake::timeout;
    }
}

void MarkerWatch::interrupt() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto r = ::write(interrupt_fd_, &one, sizeof one);
}

} // namespace loaderlens
