// SPDX-License-Identifier: MIT
#include "loader_events.hpp"

#include <charconv>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {
int open_for_append(const std::optional<std::string>& path) {
    if (!path || path->empty()) return -1;
    return ::open(path->c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
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

LoaderEvents::LoaderEvents(const std::optional<std::string>& markers_path,
                           const std::optional<std::string>& events_path,
                           const std::optional<std::string>& sampled_path)
    : markers_fd_(open_for_append(markers_path)), events_fd_(open_for_append(events_path)) {
    if (sampled_path && !sampled_path->empty() && markers_fd_ >= 0)
        sampled_fd_ = ::open(sampled_path->c_str(), O_RDONLY | O_CLOEXEC);
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
