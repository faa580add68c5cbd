// SPDX-License-Identifier: MIT
#include "loaderlens/outside_sharers.hpp"

#include "loaderlens/pagemap.hpp"
#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace loaderlens {

namespace {

// Whether `pid` descends from a process of the tree: a worker forked since the tracker last
// looked maps the files it inherited before the tree knows it, and is the tree's all the same.
// Walks the parents in /proc/PID/stat; a process that exits on the way is taken as outside.
bool descends_from_tree(pid_t pid, const std::set<pid_t>& tree, std::map<pid_t, bool>& known) {
    std::vector<pid_t> path;
    bool inside = false;
    for (pid_t p = pid; p > 1 && path.size() < 256;) { // 256: a cycle read mid-reuse ends too
        if (auto it = known.find(p); it != known.end()) {
            inside = it->second;
            break;
        }
        path.push_back(p);
        const auto text = read_text_file("/proc/" + std::to_string(p) + "/stat");
        const auto stat = text ? parse_stat(*text) : std::nullopt;
        if (!stat) break;
        if (tree.contains(stat->ppid)) {
            inside = true;
            break;
        }
        p = stat->ppid;
    }
    for (pid_t p : path)
        known[p] = inside;
    return inside;
}

} // namespace

OutsideSharerCount
count_outside_sharers(const std::set<pid_t>& tree,
                      const std::set<std::pair<std::uint64_t, std::uint64_t>>& files) {
    OutsideSharerCount result;
    if (files.empty()) return result;
    std::multimap<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> by_inode;
    for (const auto& file : files)
        by_inode.emplace(file.second, file);
    DIR* proc = ::opendir("/proc");
    if (!proc) return result;
    const pid_t self = ::getpid();
    std::map<pid_t, bool> ancestry; // pid -> descends from the tree, for this look
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
            // By inode: the rollup tier asks about every file the tree maps, libraries too.
            for (auto it = by_inode.lower_bound(m.inode);
                 it != by_inode.end() && it->first == m.inode; ++it)
                if (it->second.first == m.device || it->second.first == 0) seen.insert(it->second);
        }
        // Only a process that maps a followed file has its ancestry read.
        if (seen.empty() || descends_from_tree(pid, tree, ancestry)) continue;
        for (const auto& file : seen)
            ++result.sharers[file];
    }
    ::closedir(proc);
    return result;
}

std::map<FileKey, TreeFile> files_of_tree(const std::set<pid_t>& tree) {
    std::map<FileKey, std::vector<std::pair<std::uint64_t, std::uint64_t>>> ranges;
    std::map<FileKey, TreeFile> files;
    for (pid_t pid : tree) {
        auto text = read_text_file("/proc/" + std::to_string(pid) + "/maps");
        if (!text) continue;
        std::set<FileKey> seen;
        for (const FileMapping& m : parse_file_mappings(*text)) {
            const FileKey key{m.device, m.inode};
            ranges[key].push_back({m.offset, m.offset + (m.end - m.start)});
            if (seen.insert(key).second) ++files[key].mappers;
        }
    }
    for (auto& [key, spans] : ranges) { // the union of the file's mapped ranges
        std::sort(spans.begin(), spans.end());
        std::uint64_t covered = 0, reach = 0;
        for (const auto& [from, to] : spans) {
            const std::uint64_t start = std::max(from, reach);
            if (to > start) covered += to - start;
            reach = std::max(reach, to);
        }
        files[key].covered = covered;
    }
    return files;
}

} // namespace loaderlens
