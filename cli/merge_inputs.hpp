// SPDX-License-Identifier: MIT
// What `loaderlens merge` checks of its inputs before it writes anything (docs/merge.md): each is
// a finished (or cut) recording that is not a merge itself, with a wall-clock start; none is
// given twice or is another's copy; all are of one SLURM job. Each refused input gets one line
// naming it and why. The accepted ones become parts: in start order, named after their host (with
// the step and task only where needed to tell them apart), with their offsets.
#pragma once

#include "loaderlens/recording_data.hpp"

#include <string>
#include <vector>

namespace loaderlens::cli {

struct MergeInputs {
    std::vector<RecordingPart> parts;  // in start order, ids 0 (the writer assigns them)
    std::vector<std::string> refusals; // one line each: "FILE: why"
    std::vector<std::string> warnings; // one line each (a cut input, a lost -wal)
};

MergeInputs check_merge_inputs(const std::vector<std::string>& files);

// Names the parts: the host where it is unique, else host.stepS, host.stepS.taskT, or host.N
// (N: its rank among that host's parts in start order) where step and task do not tell apart.
void name_parts(std::vector<RecordingPart>& parts);

} // namespace loaderlens::cli
