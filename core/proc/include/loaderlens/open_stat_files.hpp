// SPDX-License-Identifier: MIT
// /proc/PID/stat of the tree's members, kept open and re-read with pread. The tree tracker reads
// a member's stat at each fast tick while it is young or has no pidfd, else when it ended and once
// a second (exits, zombies, renames); opening the file is a path
// lookup in /proc that cost more than the read itself (perf of the fast thread with 64 members,
// docs/benchmarks-sampling.md). An open file follows its process: once the process is reaped a
// read fails (ESRCH), so a PID reused by another process is never read through it, and a file is
// opened again when the /proc/PID directory's inode changed.
#pragma once

#include "loaderlens/proc_text.hpp"

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unordered_map>

namespace loaderlens {

class OpenStatFiles {
  public:
    OpenStatFiles() = default;
    ~OpenStatFiles();
    OpenStatFiles(const OpenStatFiles&) = delete;
    OpenStatFiles& operator=(const OpenStatFiles&) = delete;

    // The stat of `pid` whose /proc/PID has inode `inode`; nothing when it cannot be read.
    std::optional<StatFields> read(pid_t pid, ino_t inode);
    // Closes the files of the processes `keep` says no to.
    void keep_only(const std::function<bool(pid_t)>& keep);
    std::size_t open_files() const { return files_.size(); }

  private:
    struct File {
        int fd = -1;
        ino_t inode = 0;
    };
    void close(pid_t pid);
    std::unordered_map<pid_t, File> files_;
    std::string buffer_;
};

} // namespace loaderlens
