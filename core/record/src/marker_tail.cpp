// SPDX-License-Identifier: MIT
#include "loaderlens/marker_tail.hpp"

#include <algorithm>
#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens {

namespace {
// "@1234567890 text" -> the time and the text; anything else is text read now.
Marker parse_marker_line(const std::string& line, const RecordingClock& clock,
                         std::int64_t now_ms) {
    if (line.size() > 2 && line[0] == '@') {
        std::size_t space = line.find(' ');
        std::int64_t boot_ns = 0;
        const char* first = line.data() + 1;
        const char* last = line.data() + (space == std::string::npos ? line.size() : space);
        auto [end, error] = std::from_chars(first, last, boot_ns);
        if (error == std::errc() && end == last && space != std::string::npos) {
            // A stamp from the future or from before the recording is kept, but clamped.
            const std::int64_t t =
                std::clamp<std::int64_t>(clock.boot_ns_to_ms(boot_ns), 0, now_ms);
            return {t, "env-file", line.substr(space + 1)};
        }
    }
    return {now_ms, "env-file", line};
}
} // namespace

bool MarkerTail::rewritten(const struct stat& st, int fd) const {
    if (offset_ == 0) return false;
    if (st.st_ino != inode_ || st.st_size < offset_) return true;
    std::string now(last_read_.size(), '\0');
    const auto at = static_cast<off_t>(offset_ - static_cast<long long>(last_read_.size()));
    return ::pread(fd, now.data(), now.size(), at) != static_cast<ssize_t>(now.size()) ||
           now != last_read_;
}

std::vector<Marker> MarkerTail::poll(const RecordingClock& clock) {
    const std::int64_t now_ms = clock.now_ms();
    std::vector<Marker> markers;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return markers;
    const bool touched = st.st_mtim.tv_sec != mtime_.tv_sec ||
                         st.st_mtim.tv_nsec != mtime_.tv_nsec || st.st_ino != inode_;
    if (!touched && st.st_size == offset_) return markers; // the common case: one stat(2)
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return markers;
    if (fstat(fd, &st) != 0 || rewritten(st, fd)) { // start over, without the old partial line
        offset_ = 0;
        partial_.clear();
        last_read_.clear();
    }
    inode_ = st.st_ino;
    mtime_ = st.st_mtim;
    char buffer[4096];
    ssize_t n;
    while ((n = ::pread(fd, buffer, sizeof buffer, offset_)) > 0) {
        offset_ += n;
        partial_.append(buffer, static_cast<std::size_t>(n));
        last_read_.append(buffer, static_cast<std::size_t>(n));
        if (last_read_.size() > 64) last_read_.erase(0, last_read_.size() - 64);
    }
    ::close(fd);
    std::size_t start = 0, eol;
    while ((eol = partial_.find('\n', start)) != std::string::npos) {
        std::string line = partial_.substr(start, eol - start);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
            line.pop_back();
        if (!line.empty()) markers.push_back(parse_marker_line(line, clock, now_ms));
        start = eol + 1;
    }
    partial_.erase(0, start);
    return markers;
}

} // namespace loaderlens
