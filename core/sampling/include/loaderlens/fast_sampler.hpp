// SPDX-License-Identifier: MIT
// The fast tier's sampler (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/types.hpp"

#include <map>
#include <string>
#include <vector>

namespace loaderlens {

// Fast tier: RSS and its anon/file/shmem split plus swap, from kept-open /proc/PID/statm and
// /proc/PID/status. statm (about 1 µs) is read every tick; status (several times dearer: the
// kernel formats ~55 lines) is read again only when statm's resident or shared count moved, or
// when the last read is older than `status_max_age_ms`. While both counts stand still, anon
// (= resident - shared) is exact and the file/shmem split can only move in equal and opposite
// steps, which the periodic re-read bounds.
class FastSampler {
  public:
    explicit FastSampler(std::int64_t status_max_age_ms = 1000)
        : status_max_age_ms_(status_max_age_ms) {}
    ~FastSampler();
    FastSampler(const FastSampler&) = delete;
    FastSampler& operator=(const FastSampler&) = delete;

    void sample(const std::vector<ProcessInfo>& live, std::int64_t now_ms,
                std::vector<FastSample>& out, Problems& problems);
    void forget(const ProcessKey& key);

  private:
    struct State {
        int statm_fd = -1, status_fd = -1;
        std::int64_t resident = -1, shared = -1;
        std::int64_t status_read_ms = 0;
        FastSample split;
    };
    std::int64_t status_max_age_ms_;
    std::map<ProcessKey, State> states_;
    std::string buffer_;
};

} // namespace loaderlens
