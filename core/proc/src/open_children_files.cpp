// SPDX-License-Identifier: MIT
#include "loaderlens/open_children_files.hpp"

#include "loaderlens/proc_text.hpp"

#include <charconv>
#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

namespace {
int open_children(pid_t pid) {
    const std::string id = std::to_string(pid);
    return ::open(("/proc/" + id + "/task/" + id + "/children").c_str(), O_RDONLY | O_CLOEXEC);
}
} // namespace

bool OpenChildrenFiles::kernel_has_children_lists() {
    static const bool present = [] {
        const int fd = open_children(getpid());
        if (fd < 0) return false;
        ::close(fd);
        return true;
    }();
    return present;
}

OpenChildrenFiles::~OpenChildrenFiles() {
    for (const auto& [key, fd] : files_)
        ::close(fd);
}

bool OpenChildrenFiles::read(const ProcessKey& key, std::vector<pid_t>& children) {
    children.clear();
    auto it = files_.find(key);
    if (it == files_.end()) {
        const int fd = open_children(key.pid);
        if (fd < 0) return false;
        it = files_.emplace(key, fd).first;
    }
    if (pread_whole(it->second, buffer_) < 0) return false;
    const char* at = buffer_.data();
    const char* end = at + buffer_.size();
    while (at < end) {
        pid_t pid = 0;
        auto [next, error] = std::from_chars(at, end, pid);
        if (error == std::errc() && pid > 0) children.push_back(pid);
        at = next == at ? at + 1 : next;
    }
    return true;
}

void OpenChildrenFiles::keep_only(const std::function<bool(const ProcessKey&)>& keep) {
    for (auto it = files_.begin(); it != files_.end();) {
        if (keep(it->first)) {
            ++it;
            continue;
        }
        ::close(it->second);
        it = files_.erase(it);
    }
}

} // namespace loaderlens
