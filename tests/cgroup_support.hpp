// SPDX-License-Identifier: MIT
// Memory cgroups made by tests (v1 or v2), found and read without the code under test: where a
// hierarchy with the memory controller is mounted comes from /proc/self/mountinfo and
// /proc/self/cgroup read here, and the kernel's own figures are read from the cgroup's files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <sys/types.h>

namespace loaderlens::test::cgroups {

// Where tests may make memory cgroups: `base` is the directory to make them in.
//  - v1: our own cgroup in the memory hierarchy (v1 lets a cgroup with processes have children);
//  - v2: the root of the cgroup2 mount, after "+memory" in its cgroup.subtree_control (a cgroup
//    with processes cannot give its children controllers; the root is exempt).
// Empty with `why` set when this machine has no such hierarchy, or it cannot be written.
struct Hierarchy {
    std::string version; // "v1" or "v2"
    std::filesystem::path base;
};
std::optional<Hierarchy> memory_v1(std::string& why);
std::optional<Hierarchy> memory_v2(std::string& why);

// A cgroup made for a test: `parent`/`name`. On v2 "+memory" is enabled in the parent's
// cgroup.subtree_control first, so that the new cgroup has the memory files. When it goes, its
// processes are killed (SIGKILL) and it is removed (rmdir; children first: destroy them first).
class TestCgroup {
  public:
    TestCgroup(const std::string& version, const std::filesystem::path& parent,
               const std::string& name);
    ~TestCgroup();
    TestCgroup(const TestCgroup&) = delete;
    TestCgroup& operator=(const TestCgroup&) = delete;

    // Empty when made; else why not.
    const std::string& problem() const { return problem_; }
    const std::filesystem::path& dir() const { return dir_; }
    const std::string& version() const { return version_; }

    // memory.max (v2) or memory.limit_in_bytes (v1); false with problem() set on failure.
    bool set_limit(std::int64_t bytes);
    // Makes "+memory" available to this cgroup's children (v2; nothing to do on v1).
    bool delegate_memory();
    // Moves the process into this cgroup (cgroup.procs).
    bool add(pid_t pid);

    // The kernel's own figures, in bytes: memory.current or memory.usage_in_bytes, and a key of
    // memory.stat.
    std::optional<std::int64_t> usage_bytes() const;
    std::optional<std::int64_t> stat(const std::string& key) const;
    // Anonymous memory charged here and below: "anon" (v2) or "total_rss" (v1).
    std::optional<std::int64_t> anon_bytes() const;

  private:
    std::string version_;
    std::filesystem::path dir_;
    std::string problem_;
    bool made_ = false;
};

// Writes `text` to a kernel file in one write(2); the error text, empty on success.
std::string write_kernel_file(const std::filesystem::path& path, const std::string& text);

} // namespace loaderlens::test::cgroups
