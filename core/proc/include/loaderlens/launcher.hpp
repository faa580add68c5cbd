// SPDX-License-Identifier: MIT
// Starts the command to record, the way /usr/bin/time does, and tells exec failures apart.
#pragma once

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace loaderlens {

struct Launched {
    pid_t pid = -1;
    int exec_errno = 0; // non-zero when the command could not be started (ENOENT, EACCES...)
};

struct LaunchOptions {
    // The child is killed (SIGKILL) when the launching thread dies, however it dies (SIGKILL, a
    // crash): for a program loaderlens starts for itself (`replay` runs `loaderlens load`), which
    // must not run on as an orphan. Never for a user's command (`record -- CMD`): the recorder
    // does not change how the command lives or dies. Call launch() from a thread that lives as
    // long as the child should (PR_SET_PDEATHSIG fires when the forking thread exits).
    bool die_with_parent = false;
    // Descriptors (opened close-on-exec here) that the command inherits: the files beside the
    // recording it writes, handed over open so that it never opens them by a name someone may
    // have swapped (LOADERLENS_*_FD, docs/recording.md).
    std::vector<int> inherited_fds;
};

// Forks and execs argv[0] (searched in PATH) with `extra_env` added. The child gets the signal
// dispositions loaderlens itself was started with (see remember_inherited_signal_dispositions:
// ignored stays ignored, anything else is the default) and an empty signal mask whatever the
// caller blocked, and the caller's soft RLIMIT_NOFILE as it was before the recorder raised it.
Launched launch(const std::vector<std::string>& argv,
                const std::vector<std::pair<std::string, std::string>>& extra_env,
                const LaunchOptions& options = {});

// Notes which of the signals launch() resets were ignored when loaderlens started (nohup ignores
// SIGHUP, a pipeline may ignore SIGPIPE): call it first in main(), before loaderlens changes any
// disposition for itself. Without it, launch() gives the child default dispositions.
void remember_inherited_signal_dispositions();

// Shell conventions: 127 command not found, 126 found but not executable.
int exit_code_for_exec_errno(int error);
// 128 + signal for a killed process, else its exit status.
int exit_code_for_wait_status(int status);

// Raises the soft open-file limit to the hard one (the fast and rollup tiers keep up to three
// /proc files open per process); remembers the old value for launch().
void raise_open_file_limit();

} // namespace loaderlens
