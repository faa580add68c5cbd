// SPDX-License-Identifier: MIT
#include "loaderlens/open_stat_files.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <vector>

namespace loaderlens {

OpenStatFiles::~OpenStatFiles() {
    for (auto& [pid, file] : files_)
        ::close(file.fd);
}

void OpenStatFiles::close(pid_t pid) {
    auto it = files_.find(pid);
    if (it == files_.end()) return;
    ::close(it->second.fd);
    files_.erase(it);
}

std::optional<StatFields> OpenStatFiles::read(pid_t pid, ino_t inode) {
    auto it = files_.find(pid);
    if (it != files_.end() && it->second.inode != inode) {
        close(pid);
        it = files_.end();
    }
    if (it == files_.end()) {
        const int fd =
            ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return std::nullopt;
        it = files_.emplace(pid, File{fd, inode}).first;
    }
    if (pread_whole(it->second.fd, buffer_) <= 0) {
        close(pid); // reaped: the next process under this PID gets a file of its own
        return std::nullopt;
    }
    return parse_stat(buffer_);
}

void OpenStatFiles::keep_only(const std::function<bool(pid_t)>& keep) {
    std::vector<pid_t> gone;
    for (const auto& [pid, file] : files_)
        if (!keep(pid)) gone.push_back(pid);
    for (pid_t pid : gone)
        close(pid);
}

} // namespace loaderlens
