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

std::vector<Marker> MarkerTail::poll(const RecordingClock& clock) {
    const std::int64_t now_ms = clock.now_ms();
    std::vector<Marker> markers;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return markers;
    if (st.st_size < offset_) { // truncated or replaced: start over
        offset_ = 0;
        partial_.clear();
    }
    if (st.st_size == offset_) return markers;
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return markers;
    char buffer[4096];
    ssize_t n;
    while ((n = ::pread(fd, buffer, sizeof buffer, offset_)) > 0) {
        offset_ += n;
        partial_.append(buffer, static_cast<std::size_t>(n));
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
