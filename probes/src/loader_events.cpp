// SPDX-License-Identifier: MIT
#include "loader_events.hpp"

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
} // namespace

std::int64_t boottime_now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

LoaderEvents::LoaderEvents(const std::optional<std::string>& markers_path,
                           const std::optional<std::string>& events_path)
    : markers_fd_(open_for_append(markers_path)), events_fd_(open_for_append(events_path)) {}

LoaderEvents::~LoaderEvents() {
    if (markers_fd_ >= 0) ::close(markers_fd_);
    if (events_fd_ >= 0) ::close(events_fd_);
}

void LoaderEvents::marker(const std::string& text, std::int64_t boot_ns) {
    write_line(markers_fd_, "@" + std::to_string(boot_ns) + " " + text + "\n");
}

void LoaderEvents::event(nlohmann::json event) {
    write_line(events_fd_,
               event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

} // namespace loaderlens::probes
