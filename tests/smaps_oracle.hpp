// SPDX-License-Identifier: MIT
// The kernel's own per-file figures, read by the tests from /proc/PID/smaps with a parser of
// their own (none of core's code): the oracle against which computed per-file figures are held.
#pragma once

#include <cstdint>
#include <optional>
#include <sys/types.h>

namespace loaderlens::test {

struct SmapsOfFile {
    std::int64_t rss_kb = 0, pss_kb = 0;
    int mappings = 0;
};

// Rss and Pss summed over the process's mappings of `inode`; nothing when the process is gone
// (or its smaps cannot be read).
std::optional<SmapsOfFile> smaps_of_file(pid_t pid, std::uint64_t inode);

// The Pss line of /proc/PID/smaps_rollup; nothing for a process that is gone or a zombie (no
// address space).
std::optional<std::int64_t> rollup_pss_kb(pid_t pid);

} // namespace loaderlens::test
