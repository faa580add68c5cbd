// SPDX-License-Identifier: MIT
// A SLURM step's tasks on one node are held to the step's limit together; each task has its own
// recorder and file. The report of one finds the others beside it (docs/slurm.md): the names its
// recorder's -o pattern (meta output_pattern) gives for the node's other task ids (meta
// slurm_gtids), in the directory of the recording reported, each checked to be that task of that
// step on that node.
#pragma once

#include "loaderlens/diagnosis.hpp"
#include "loaderlens/recording.hpp"

namespace loaderlens {

// Fills options.siblings and options.siblings_missing; nothing for a recording that is not one
// of several tasks on its node.
void find_sibling_tasks(const Recording& recording, DiagnosisOptions& options);

} // namespace loaderlens
