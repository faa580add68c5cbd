// SPDX-License-Identifier: MIT
#include "loaderlens/outside_sharers.hpp"

#include "loaderlens/pagemap.hpp"
#include "loaderlens/proc_text.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <string>
#include <unistd.h>

namespace loaderlens {

OutsideSharerCount
count_outside_sharers(const std::set<pid_t>& tree,
                      const std::set<std::pair<std::uint64_t, std::uint64_t>>& files) {
    OutsideSharerCount result;
    if (files.empty()) return result;
    DIR* proc = ::opendir("/proc");
    if (!proc) return result;
    const pid_t self = ::getpid();
    while (const dirent* entry = ::readdir(proc)) {
        pid_t pid = 0;
        const char* end = entry->d_name + std::strlen(entry->d_name);
        if (std::from_chars(entry->d_name, end, pid).ptr != end || pid <= 0) continue;
        if (pid == self || tree.contains(pid)) continue;
        int error = 0;
        auto text = read_text_file("/proc/" + std::to_string(pid) + "/maps", &error);
        if (!text) {
            if (error == EACCES || error == EPERM) ++result.unreadable;
            continue; // ENOENT/ESRCH: it exited while we looked
        }
        std::set<std::pair<std::uint64_t, std::uint64_t>> seen; // one count per process
        for (const FileMapping& m : parse_file_mappings(*text)) {
            // Inode only for the device: see ResidencySampler (btrfs, overlayfs device numbers).
            for (const auto& file : files)
                if (file.second == m.inode && (file.first == m.device || file.first == 0) &&
                    seen.insert(file).second)
                    ++result.sharers[file];
        }
    }
    ::closedir(proc);
    return result;
}

} // namespace loaderlens
