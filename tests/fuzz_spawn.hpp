// SPDX-License-Identifier: MIT
// Starting one fuzz command: in a process group of its own, with a shell's signal defaults, stdin
// from /dev/null, stdout and stderr into files, the runner's resource limits.
#pragma once

#include "fuzz_runner.hpp"

#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens::test {

// The child's pid, or -1 (errno set). posix_spawn (a vfork: no copy of the test process's page
// tables, which under ASan costs more than the command's own start) unless the command runs as
// another user, which only a forked child can become.
pid_t spawn_command(const FuzzCommand& command, const std::string& workdir, const std::string& out,
                    const std::string& err, const std::vector<std::string>& environment);

} // namespace loaderlens::test
