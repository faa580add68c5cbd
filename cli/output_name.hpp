// SPDX-License-Identifier: MIT
// Names of recordings: patterns with SLURM ids, a default that does not collide across steps and
// tasks, and the next free name when the chosen one is taken.
#pragma once

#include "loaderlens/recorder.hpp"

#include <memory>
#include <string>

namespace loaderlens::cli {

// Expands %j (SLURM_JOB_ID, "nojob" outside SLURM), %s (SLURM_STEP_ID; "batch" in a batch script,
// "nostep" outside SLURM), %t (SLURM_PROCID, the task; 0 outside SLURM), %a (SLURM_ARRAY_TASK_ID,
// "noarray"), %N (SLURMD_NODENAME or the host name), %p (this recorder's PID) and %%.
std::string expand_output_name(const std::string& pattern);
std::string node_name();

// The default pattern: `loaderlens[-prefix]-%j.%s.%t-%N.db` inside a SLURM job (one file per job,
// step and task, found by the job id), `loaderlens[-prefix]-%N-%p.db` elsewhere.
std::string default_output_pattern(const std::string& prefix = "");

// `name` with ".N" before its extension (run.db -> run.1.db; a name without one gets ".N").
std::string numbered_name(const std::string& name, int n);

struct CreatedRecorder {
    std::unique_ptr<Recorder> recorder;
    std::string path;      // where it records (the expanded name, or the next free one)
    std::string requested; // the expanded name asked for
};

// Creates the recording. When `path` exists and neither `overwrite` nor `no_clobber` is set, the
// recording goes to the next free numbered name, so that a monitoring problem never keeps the
// command from running. Throws RecorderError (one line) when no recording can be created.
CreatedRecorder create_recorder(const std::string& path, bool overwrite, bool no_clobber);

} // namespace loaderlens::cli
