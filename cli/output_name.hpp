#pragma once

#include <string>

namespace loaderlens::cli {

// Expands %j (SLURM_JOB_ID, "nojob" outside SLURM), %N (SLURMD_NODENAME or the host name),
// %p (this recorder's PID) and %% in an output file name.
std::string expand_output_name(const std::string& pattern);
std::string node_name();

} // namespace loaderlens::cli
