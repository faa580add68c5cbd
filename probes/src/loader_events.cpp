// SPDX-License-Identifier: MIT
#include "loader_events.hpp"

#include <charconv>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {
// "FD:DEVICE:INODE" -> a close-on-exec duplicate of FD if it is still that regular file (the
// variable may have reached a process where that number is another file), else -1.
int inherited(const std::optional<std::string>& identity, struct stat& expected) {
    if (!identity) return -1;
    long long fd = -1;
    unsigned long long device = 0, inode = 0;
    char extra = 0;
    if (std::sscanf(identity->c_str(), "%lld:%llu:%llu%c", &fd, &device, &inode, &extra) != 3 ||
        fd < 0 || fd > 1'000'000)
        return -1;
    expected.st_dev = static_cast<dev_t>(device);
    expected.st_ino = static_cast<ino_t>(inode);
    struct stat st {};
    if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_dev != expected.st_dev || st.st_ino != expected.st_ino)
        return -1;
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return ::fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 0);
}

int open_sidecar(const std::optional<std::string>& path, const std::optional<std::string>& handed,
                 int flags) {
    // The name's variable is the switch: unset (a script that runs the loader bare under
    // record), the file is not written, whatever descriptor was inherited.
    if (!path || path->empty()) return -1;
    struct stat expected {};
    if (int fd = inherited(handed, expected); fd >= 0) return fd;
    // Created only when nobody made it for us; a file record made must still be that one.
    const bool made_by_record = expected.st_ino != 0;
    const int create = made_by_record || (flags & O_ACCMODE) == O_RDONLY ? 0 : O_CREAT;
    const int fd = ::open(path->c_str(),
                          flags | create | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    struct stat st {};
    if (fd < 0) return -1;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (made_by_record && (st.st_dev != expected.st_dev || st.st_ino != expected.st_ino))) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void write_line(int fd, const std::string& line) {
    if (fd < 0) return;
    // Best effort: the run does not stop because the recorder's side file went away.
    [[maybe_unused]] ssize_t written = ::write(fd, line.data(), line.size());
}

// "N N\n" -> N; a torn read (the two differ) or anything else -> nothing.
std::optional<std::int64_t> read_sampled(int fd) {
    char text[64];
    const ssize_t n = ::pread(fd, text, sizeof text, 0);
    if (n <= 0) return std::nullopt;
    const char* end = text + n;
    std::int64_t first = 0, second = 0;
    auto [after_first, e1] = std::from_chars(text, end, first);
    if (e1 != std::errc() || after_first == end || *after_first != ' ') return std::nullopt;
    auto [after_second, e2] = std::from_chars(after_first + 1, end, second);
    if (e2 != std::errc() || first != second) return std::nullopt;
    return first;
}
} // namespace

std::int64_t boottime_now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

LoaderEvents::LoaderEvents(const LoaderOptions& options)
    : markers_fd_(open_sidecar(options.markers_path, options.markers_fd, O_WRONLY | O_APPEND)),
      events_fd_(open_sidecar(options.events_path, options.events_fd, O_WRONLY | O_APPEND)) {
    if (markers_fd_ >= 0)
        sampled_fd_ = open_sidecar(options.sampled_path, options.sampled_fd, O_RDONLY);
}

LoaderEvents::~LoaderEvents() {
    for (int fd : {markers_fd_, events_fd_, sampled_fd_})
        if (fd >= 0) ::close(fd);
}

bool LoaderEvents::wait_until_sampled(std::int64_t boot_ns, std::int64_t timeout_ms) {
    if (sampled_fd_ < 0) return false;
    const std::int64_t deadline = boottime_now_ns() + timeout_ms * 1'000'000;
    for (;;) {
        if (auto sampled = read_sampled(sampled_fd_); sampled && *sampled >= boot_ns) return true;
        if (boottime_now_ns() >= deadline) break;
        ::usleep(1000); // a sample takes tens of ms: polling at 1 ms costs nothing that matters
    }
    ::close(sampled_fd_); // the recorder does not answer: never wait for it again
    sampled_fd_ = -1;
    return false;
}

void LoaderEvents::marker(const std::string& text, std::int64_t boot_ns) {
    write_line(markers_fd_, "@" + std::to_string(boot_ns) + " " + text + "\n");
}

void LoaderEvents::event(nlohmann::json event) {
    write_line(events_fd_,
               event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

} // namespace loaderlens::probes
