// SPDX-License-Identifier: MIT
#include "loaderlens/cgroup_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <sstream>
#include <string_view>
#include <sys/statvfs.h>
#include <unistd.h>
#include <vector>

namespace loaderlens {

// The kernel writes a space, tab, newline or backslash in a mountinfo path as \040, \011, \012,
// \134 (fields are separated by spaces): each field is split off first, then decoded.
std::vector<std::string> mountinfo_fields(std::string_view line) {
    auto octal = [](char c) { return c >= '0' && c <= '7'; };
    std::vector<std::string> fields;
    std::istringstream words{std::string(line)};
    std::string word;
    while (words >> word) {
        std::string field;
        for (std::size_t i = 0; i < word.size(); ++i) {
            if (word[i] == '\\' && i + 3 < word.size() && octal(word[i + 1]) &&
                octal(word[i + 2]) && octal(word[i + 3])) {
                field += static_cast<char>((word[i + 1] - '0') * 64 + (word[i + 2] - '0') * 8 +
                                           (word[i + 3] - '0'));
                i += 3;
            } else {
                field += word[i];
            }
        }
        fields.push_back(std::move(field));
    }
    return fields;
}

namespace {

struct Mount {
    std::string root, point, fstype, super_options;
};

std::vector<Mount> cgroup_mounts() {
    std::vector<Mount> mounts;
    auto text = read_text_file("/proc/self/mountinfo");
    if (!text) return mounts;
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
        // id parent major:minor root point options [optional...] - fstype source super_options
        const auto f = mountinfo_fields(line);
        if (f.size() < 6) continue;
        const auto dash = std::find(f.begin() + 6, f.end(), "-");
        if (f.end() - dash < 4) continue;
        Mount mount{f[3], f[4], dash[1], dash[3]};
        if (mount.fstype == "cgroup" || mount.fstype == "cgroup2") mounts.push_back(mount);
    }
    return mounts;
}

bool has_option(const std::string& options, const std::string& wanted) {
    std::istringstream parts(options);
    std::string part;
    while (std::getline(parts, part, ','))
        if (part == wanted) return true;
    return false;
}

std::string join_under(const Mount& mount, const std::string& cgroup_path) {
    // The mount's root is the part of the hierarchy it shows (a container sees its own subtree).
    std::string relative = cgroup_path;
    if (mount.root != "/" && relative.starts_with(mount.root))
        relative = relative.substr(mount.root.size());
    return mount.point + (relative == "/" ? "" : relative);
}

Kib read_bytes_as_kib(const std::string& path, bool* unlimited = nullptr) {
    auto text = read_text_file(path);
    if (!text) return std::nullopt;
    if (text->starts_with("max")) {
        if (unlimited) *unlimited = true;
        return std::nullopt;
    }
    std::int64_t bytes = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), bytes);
    if (ec != std::errc{}) return std::nullopt;
    // v1 reports "no limit" as a huge page-rounded number (LONG_MAX rounded down to a page).
    if (unlimited && bytes >= (std::int64_t{1} << 60)) {
        *unlimited = true;
        return std::nullopt;
    }
    return bytes / 1024;
}

// "key value" lines (memory.stat, memory.events, memory.oom_control), values in bytes or counts.
std::optional<std::int64_t> read_keyed(const std::string& text, const std::string& key) {
    std::istringstream lines(text);
    std::string name;
    std::int64_t value = 0;
    while (lines >> name >> value)
        if (name == key) return value;
    return std::nullopt;
}

Kib stat_kib(const std::string& text, std::initializer_list<const char*> keys) {
    for (const char* key : keys)
        if (auto bytes = read_keyed(text, key)) return *bytes / 1024;
    return std::nullopt;
}

} // namespace

std::optional<CgroupLocation> locate_memory_cgroup(pid_t pid, std::string* why) {
    auto text = read_text_file("/proc/" + std::to_string(pid) + "/cgroup");
    if (!text) {
        if (why) *why = "cannot read /proc/" + std::to_string(pid) + "/cgroup";
        return std::nullopt;
    }
    std::string v2_path, v1_path;
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
        std::size_t first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        std::string hierarchy = line.substr(0, first);
        std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        if (hierarchy == "0" && controllers.empty())
            v2_path = path;
        else if (has_option(controllers, "memory"))
            v1_path = path;
    }
    const auto mounts = cgroup_mounts();
    for (const Mount& mount : mounts) {
        if (mount.fstype != "cgroup2" || v2_path.empty()) continue;
        std::string dir = join_under(mount, v2_path);
        if (access((dir + "/memory.current").c_str(), R_OK) == 0)
            return CgroupLocation{"v2", v2_path, dir, mount.point};
    }
    for (const Mount& mount : mounts) {
        if (mount.fstype != "cgroup" || v1_path.empty() ||
            !has_option(mount.super_options, "memory"))
            continue;
        std::string dir = join_under(mount, v1_path);
        if (access((dir + "/memory.usage_in_bytes").c_str(), R_OK) == 0)
            return CgroupLocation{"v1", v1_path, dir, mount.point};
    }
    if (why)
        *why =
            "no readable memory cgroup (no v2 memory.current, no v1 memory controller) for PID " +
            std::to_string(pid);
    return std::nullopt;
}

CgroupSample read_cgroup(const CgroupLocation& where) {
    CgroupSample s;
    s.version = where.version;
    s.path = where.cgroup_path;
    const std::string& d = where.directory;
    if (where.version == "v2") {
        s.usage = read_bytes_as_kib(d + "/memory.current");
        s.peak = read_bytes_as_kib(d + "/memory.peak"); // Linux >= 5.19
        // The effective limit is the smallest memory.max from here up to the root we can see.
        s.unlimited = true;
        for (std::string dir = d; dir.size() >= where.mount_point.size();
             dir = dir.substr(0, dir.rfind('/'))) {
            bool unlimited = false;
            Kib limit = read_bytes_as_kib(dir + "/memory.max", &unlimited);
            if (limit && (!s.limit || *limit < *s.limit)) s.limit = limit;
            if (dir == where.mount_point) break;
        }
        if (s.limit) s.unlimited = false;
        if (auto stat = read_text_file(d + "/memory.stat")) {
            s.anon = stat_kib(*stat, {"anon"});
            s.file = stat_kib(*stat, {"file"});
            s.shmem = stat_kib(*stat, {"shmem"});
            s.file_mapped = stat_kib(*stat, {"file_mapped"});
            s.active_file = stat_kib(*stat, {"active_file"});
            s.inactive_file = stat_kib(*stat, {"inactive_file"});
        }
        if (auto events = read_text_file(d + "/memory.events"))
            s.oom_kill = read_keyed(*events, "oom_kill");
    } else {
        s.usage = read_bytes_as_kib(d + "/memory.usage_in_bytes");
        s.peak = read_bytes_as_kib(d + "/memory.max_usage_in_bytes");
        s.limit = read_bytes_as_kib(d + "/memory.limit_in_bytes", &s.unlimited);
        if (auto stat = read_text_file(d + "/memory.stat")) {
            // total_* include descendant cgroups, which is what usage_in_bytes counts.
            s.anon = stat_kib(*stat, {"total_rss", "rss"});
            s.file = stat_kib(*stat, {"total_cache", "cache"});
            s.shmem = stat_kib(*stat, {"total_shmem", "shmem"});
            s.file_mapped = stat_kib(*stat, {"total_mapped_file", "mapped_file"});
            s.active_file = stat_kib(*stat, {"total_active_file", "active_file"});
            s.inactive_file = stat_kib(*stat, {"total_inactive_file", "inactive_file"});
            // With use_hierarchy (always on since 5.x) this is the smallest limit up the tree.
            if (auto hierarchical = read_keyed(*stat, "hierarchical_memory_limit")) {
                if (*hierarchical >= (std::int64_t{1} << 60)) {
                    s.unlimited = !s.limit;
                } else {
                    s.limit = *hierarchical / 1024;
                    s.unlimited = false;
                }
            }
        }
        if (auto failcnt = read_text_file(d + "/memory.failcnt")) {
            std::int64_t count = 0;
            if (std::from_chars(failcnt->data(), failcnt->data() + failcnt->size(), count).ec ==
                std::errc{})
                s.failcnt = count;
        }
        if (auto oom = read_text_file(d + "/memory.oom_control"))
            s.oom_kill = read_keyed(*oom, "oom_kill");
    }
    return s;
}

} // namespace loaderlens
