// SPDX-License-Identifier: MIT
// /proc/PID/task/PID/children of the tree's members, kept open and re-read with pread: the
// tracker finds births there at every tick (a path lookup in /proc per open would cost more than
// the read). A file belongs to one process (pid and start time): a PID reused by another process
// gets a file of its own, and the old one reads empty once its process is reaped.
#pragma once

#include "loaderlens/types.hpp"

#include <functional>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens {

class OpenChildrenFiles {
  public:
    OpenChildrenFiles() = default;
    ~OpenChildrenFiles();
    OpenChildrenFiles(const OpenChildrenFiles&) = delete;
    OpenChildrenFiles& operator=(const OpenChildrenFiles&) = delete;

    // Whether this kernel has children lists (CONFIG_PROC_CHILDREN), probed on our own thread.
    static bool kernel_has_children_lists();
    // The children of the main thread of `key`'s process; false when the list cannot be read.
    bool read(const ProcessKey& key, std::vector<pid_t>& children);
    // Closes the files of the processes `keep` says no to.
    void keep_only(const std::function<bool(const ProcessKey&)>& keep);

  private:
    std::map<ProcessKey, int> files_;
    std::string buffer_;
};

} // namespace loaderlens
