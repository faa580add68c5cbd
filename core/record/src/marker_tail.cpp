// SPDX-License-Identifier: MIT
#include "loaderlens/marker_tail.hpp"

#include "loaderlens/file_kind.hpp"

#include <algorithm>
#include <charconv>
#include <fcntl.h>
#include <filesystem>
#include <string_view>
#include <unistd.h>
#include <utility>

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

int directory_of(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::absolute(path).parent_path();
    return ::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
}
} // namespace

MarkerTail::MarkerTail(const std::string& path)
    : path_(path), name_(std::filesystem::path(path).filename().string()),
      directory_fd_(directory_of(path)) {}

MarkerTail::MarkerTail(const Sidecar& sidecar) : path_(sidecar.path), name_(sidecar.name) {
    if (sidecar.directory_fd >= 0)
        directory_fd_ = ::fcntl(sidecar.directory_fd, F_DUPFD_CLOEXEC, 0);
    if (sidecar.fd < 0) return;
    fd_ = ::fcntl(sidecar.fd, F_DUPFD_CLOEXEC, 0);
    struct stat st {};
    own_ = fd_ >= 0 && ::fstat(fd_, &st) == 0;
    device_ = st.st_dev;
    inode_ = st.st_ino;
}

MarkerTail::~MarkerTail() {
    for (int fd : {fd_, directory_fd_})
        if (fd >= 0) ::close(fd);
}

std::vector<std::string> MarkerTail::take_warnings() {
    return std::exchange(warnings_, {});
}

void MarkerTail::warn(std::string text) {
    if (std::find(warned_.begin(), warned_.end(), text) != warned_.end()) return;
    warned_.push_back(text);
    warnings_.push_back(path_ + ": " + std::move(text));
}

void MarkerTail::start_over() {
    offset_ = 0;
    size_ = -1;
    partial_.clear();
    last_read_.clear();
    skipping_ = false;
}

void MarkerTail::follow_name() {
    if (directory_fd_ < 0) return;
    struct stat named {};
    if (::fstatat(directory_fd_, name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) return;
    const bool same = named.st_dev == device_ && named.st_ino == inode_;
    if (own_) {
        if (!same)
            warn("was replaced by " + file_kind(named.st_mode) +
                 " while the command ran: markers written to that are not read (the file "
                 "loaderlens made still is)");
        return;
    }
    if (!S_ISREG(named.st_mode)) {
        warn("is " + file_kind(named.st_mode) + ", not a regular file: not read any more");
        stopped_ = true;
        return;
    }
    if (same && fd_ >= 0) return;
    if (owner_ && named.st_uid != *owner_) {
        warn("is now a file of user " + std::to_string(named.st_uid) + ", not of user " +
             std::to_string(*owner_) + ": not read any more");
        stopped_ = true;
        return;
    }
    const int fd = ::openat(directory_fd_, name_.c_str(),
                            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0) return;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != named.st_ino ||
        st.st_dev != named.st_dev) {
        ::close(fd); // swapped again between the two looks: the next poll sees what stays
        return;
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
    owner_ = st.st_uid;
    device_ = st.st_dev;
    inode_ = st.st_ino;
    start_over();
}

bool MarkerTail::rewritten(const struct stat& st) const {
    if (offset_ == 0) return false;
    if (st.st_size < offset_) return true;
    std::string now(last_read_.size(), '\0');
    const auto at = static_cast<off_t>(offset_ - static_cast<long long>(last_read_.size()));
    return ::pread(fd_, now.data(), now.size(), at) != static_cast<ssize_t>(now.size()) ||
           now != last_read_;
}

std::vector<Marker> MarkerTail::poll(const RecordingClock& clock) {
    const std::int64_t now_ms = clock.now_ms();
    std::vector<Marker> markers;
    if (stopped_) return markers;
    follow_name();
    if (stopped_ || fd_ < 0) return markers;
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return markers;
    const bool touched = st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec;
    if (!touched && st.st_size == size_ && st.st_size == offset_)
        return markers;              // the common case: nothing new
    if (rewritten(st)) start_over(); // without the old partial line
    mtime_ = st.st_mtim;
    size_ = st.st_size;
    char buffer[4096];
    ssize_t n;
    long long read_now = 0;
    while (read_now < most_read_per_poll &&
           (n = ::pread(fd_, buffer, sizeof buffer, offset_)) > 0) {
        offset_ += n;
        read_now += n;
        last_read_.append(buffer, static_cast<std::size_t>(n));
        if (last_read_.size() > 64) last_read_.erase(0, last_read_.size() - 64);
        for (std::string_view rest(buffer, static_cast<std::size_t>(n)); !rest.empty();) {
            const std::size_t eol = rest.find('\n');
            const std::string_view piece = rest.substr(0, eol);
            if (!skipping_)
                partial_.append(
                    piece.substr(0, longest_line - std::min(longest_line, partial_.size())));
            if (eol == std::string_view::npos) {
                if (partial_.size() >= longest_line) skipping_ = true;
                break;
            }
            std::string line = std::exchange(partial_, {});
            skipping_ = false;
            while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
                line.pop_back();
            if (!line.empty()) markers.push_back(parse_marker_line(line, clock, now_ms));
            rest.remove_prefix(eol + 1);
        }
    }
    if (read_now >= most_read_per_poll) size_ = -1; // more to read at the next poll
    return markers;
}

} // namespace loaderlens
