// SPDX-License-Identifier: MIT
// The rollup tier's sampler (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/types.hpp"

#include <map>
#include <string>
#include <vector>

namespace loaderlens {

// Rollup tier: /proc/PID/smaps_rollup (PSS and its split, USS, shared, swap), kept open and
// re-read with pread. Measured cheaper than libproc2's procps_pids_select, which re-reads
// /proc/PID/status and /proc/uptime on every call (see bench/).
class RollupSampler {
  public:
    RollupSampler() = default;
    ~RollupSampler();
    RollupSampler(const RollupSampler&) = delete;
    RollupSampler& operator=(const RollupSampler&) = delete;

    void sample(const std::vector<ProcessInfo>& live, std::vector<RollupSample>& out,
                Problems& problems);
    void forget(const ProcessKey& key);

  private:
    int open_rollup(const ProcessInfo& info, Problems& problems);
    std::map<ProcessKey, int> fds_;
    std::string buffer_;
};

} // namespace loaderlens
