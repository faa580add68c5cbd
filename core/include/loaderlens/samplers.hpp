// SPDX-License-Identifier: MIT
// The per-process samplers, one small class per tier (see docs/figures.md for each figure's
// source). Each keeps per-process state keyed by ProcessKey and is told when a process is gone.
#pragma once

#include "loaderlens/types.hpp"

#include <map>
#include <string>
#include <vector>

namespace loaderlens {

// What a sampler could not read this run, to be recorded once per change.
using Problems = std::vector<Unavailability>;

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

// Maps tier: /proc/PID/smaps aggregated per backing file (path + inode) and per kind of anonymous
// memory. Files with less than `min_file_rss_kb` resident are folded into one "other" object per
// process so that shared libraries do not flood the recording; the totals stay exact.
class MapsSampler {
  public:
    explicit MapsSampler(std::int64_t min_file_rss_kb = 1024) : min_file_rss_kb_(min_file_rss_kb) {}
    void sample(const std::vector<ProcessInfo>& live, std::vector<MapsSample>& out,
                Problems& problems);

  private:
    std::int64_t min_file_rss_kb_;
};

// Parses the text of /proc/PID/smaps into per-object sums (exposed for fixture tests).
std::vector<MappedObject> aggregate_smaps(std::string_view text, std::int64_t min_file_rss_kb);

// A readable reason for errno `error` when reading `what` of a process.
std::string unavailable_reason(const std::string& what, int error);

} // namespace loaderlens
