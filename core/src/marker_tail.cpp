#include "loaderlens/marker_tail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens {

std::vector<Marker> MarkerTail::poll(std::int64_t now_ms) {
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
        if (!line.empty()) markers.push_back({now_ms, "env-file", line});
        start = eol + 1;
    }
    partial_.erase(0, start);
    return markers;
}

} // namespace loaderlens
