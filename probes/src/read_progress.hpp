// SPDX-License-Identifier: MIT
// Which records the loader has finished reading, for the recorder to set residency against reads
// (readahead and fault-around amplification). Emitted as "progress" events (docs/recording.md).
#pragma once

#include "loaderlens/probes/patterns.hpp"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace loaderlens::probes {

class ReadProgress {
  public:
    ReadProgress(std::int64_t record_count, std::int64_t record_bytes, int workers);

    // A batch whose reading finished, by `worker` (-1: main, for workers 0).
    void add(const Batch& batch, int worker);
    // Workers were re-forked: a new process has read nothing and mapped nothing yet.
    void new_workers();
    // Whether a progress event is due (every `period_ns`), at boot time `now_ns`.
    bool due(std::int64_t now_ns) const { return now_ns - last_event_ns_ >= period_ns; }
    nlohmann::json event(int epoch, int generation, std::int64_t now_ns);

    static constexpr std::int64_t period_ns = 100'000'000;

  private:
    // Marks records [first, first + count) in `seen`; returns how many were new.
    std::int64_t mark(std::vector<std::uint64_t>& seen, std::int64_t first, std::int64_t count);

    std::int64_t record_count_, record_bytes_;
    std::int64_t bytes_read_ = 0, distinct_records_ = 0;
    std::vector<std::uint64_t> seen_;
    std::vector<std::vector<std::uint64_t>> worker_seen_;
    std::vector<std::int64_t> worker_distinct_records_;
    std::int64_t last_event_ns_ = 0;
};

} // namespace loaderlens::probes
