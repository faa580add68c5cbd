// SPDX-License-Identifier: MIT
// Processes outside the recorded tree that map a followed data file. The residency tier divides
// a file's pages only among the tree's processes (page_sharing.hpp); a page also mapped by an
// outside process counts more to the tree than the kernel's PSS gives it, so each computed PSS
// row carries how many outside processes mapped the file at the last look.
//
// One look reads /proc/PID/maps of every process on the machine (~20-50 µs each, docs/figures.md);
// the residency tier takes one every few seconds, not every sample.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace loaderlens {

struct OutsideSharerCount {
    // Per file (device, inode): processes outside the tree that map it.
    std::map<std::pair<std::uint64_t, std::uint64_t>, int> sharers;
    // Processes whose maps could not be read (another user's without root; here as root, the
    // container's PID 1): any of them may
    // map a file too, so a count of 0 is then "none that could be seen".
    int unreadable = 0;
};

// Looks at every process but those in `tree`, their descendants (a worker forked since the tree
// was last tracked is the tree's, not an outside sharer) and this one.
OutsideSharerCount
count_outside_sharers(const std::set<pid_t>& tree,
                      const std::set<std::pair<std::uint64_t, std::uint64_t>>& files);

// A file the tree maps, for the rollup tier's look outside (RollupSampler): how many of the
// tree's processes map it, and the bytes of the file the union of their mappings covers (at most
// what of it the tree can have present).
struct TreeFile {
    int mappers = 0;
    std::uint64_t covered = 0;
};
using FileKey = std::pair<std::uint64_t, std::uint64_t>; // (device, inode)
// From the tree's /proc/PID/maps; a process whose maps cannot be read is left out.
std::map<FileKey, TreeFile> files_of_tree(const std::set<pid_t>& tree);

} // namespace loaderlens
