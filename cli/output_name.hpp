// SPDX-License-Identifier: MIT
// Names of recordings: patterns with SLURM ids, a default that does not collide across steps and
// tasks, and the numbered names tried when the chosen one is taken (recording_output.hpp).
#pragma once

#include <string>

namespace loaderlens::cli {

// Expands %j (SLURM_JOB_ID, "nojob" outside SLURM), %s (SLURM_STEP_ID; "batch" in a batch script,
// "nostep" outside SLURM), %t (SLURM_PROCID, the task; 0 outside SLURM), %a (SLURM_ARRAY_TASK_ID,
// "noarray"), %N (SLURMD_NODENAME or the host name), %p (this recorder's PID) and %%.
std::string expand_output_name(const std::string& pattern);
// `name` as a pattern that expands to itself: every % doubled (a directory already expanded, with
// a file name to be added, handed to a command that expands its output name).
std::string literal_output_name(const std::string& name);
std::string node_name();

// The default pattern: `loaderlens[-prefix]-%j.%s.%t-%N.db` inside a SLURM job (one file per job,
// step and task, found by the job id), `loaderlens[-prefix]-%N-%p.db` elsewhere.
std::string default_output_pattern(const std::string& prefix = "");

// `name` with ".N" before its extension (run.db -> run.1.db; a name without one gets ".N").
std::string numbered_name(const std::string& name, int n);

} // namespace loaderlens::cli
