// SPDX-License-Identifier: MIT
// The memory cgroup a process is charged to (v2 or v1) and the system-wide figures.
#pragma once

#include "loaderlens/types.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loaderlens {

struct CgroupLocation {
    std::string version;     // "v2" or "v1"
    std::string cgroup_path; // as in /proc/PID/cgroup
    std::string directory;   // where its files are, e.g. /sys/fs/cgroup/memory/<path>
    std::string mount_point; // the hierarchy's root as mounted here: ancestors stop there
};

// Finds the memory cgroup of `pid` from /proc/PID/cgroup and /proc/self/mountinfo. Prefers v2 when
// its directory has memory.current (a memory controller); otherwise the v1 memory hierarchy.
// Returns nullopt with `why` set when neither can be read.
std::optional<CgroupLocation> locate_memory_cgroup(pid_t pid, std::string* why = nullptr);

// Reads the cgroup files into a sample; missing files leave their figures unavailable. The limit
// is the effective one: the smallest of the cgroup's and its ancestors' (SLURM and systemd set
// limits on the job or slice, while the processes sit in an unlimited child).
CgroupSample read_cgroup(const CgroupLocation& location);

// The space-separated fields of one /proc/PID/mountinfo line, octal escapes (\040) decoded.
std::vector<std::string> mountinfo_fields(std::string_view line);

} // namespace loaderlens
