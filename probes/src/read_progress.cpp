// SPDX-License-Identifier: MIT
#include "read_progress.hpp"

#include <algorithm>

namespace loaderlens::probes {

ReadProgress::ReadProgress(std::int64_t record_count, std::int64_t record_bytes, int workers)
    : record_count_(record_count), record_bytes_(record_bytes),
      seen_(static_cast<std::size_t>(record_count / 64 + 1), 0),
      worker_seen_(static_cast<std::size_t>(std::max(workers, 0)), seen_),
      worker_distinct_records_(static_cast<std::size_t>(std::max(workers, 0)), 0) {}

std::int64_t ReadProgress::mark(std::vector<std::uint64_t>& seen, std::int64_t first,
                                std::int64_t count) {
    std::int64_t added = 0;
    const std::int64_t last = std::min(first + count, record_count_);
    for (std::int64_t r = std::max<std::int64_t>(first, 0); r < last; ++r) {
        std::uint64_t& word = seen[static_cast<std::size_t>(r / 64)];
        const std::uint64_t bit = 1ULL << (r % 64);
        if (!(word & bit)) {
            word |= bit;
            ++added;
        }
    }
    return added;
}

void ReadProgress::add(const Batch& batch, int worker) {
    for (const Sample& sample : batch.samples) {
        bytes_read_ += sample.count * record_bytes_;
        distinct_records_ += mark(seen_, sample.index, sample.count);
        if (worker >= 0 && static_cast<std::size_t>(worker) < worker_seen_.size())
            worker_distinct_records_[static_cast<std::size_t>(worker)] +=
                mark(worker_seen_[static_cast<std::size_t>(worker)], sample.index, sample.count);
    }
}

void ReadProgress::new_workers() {
    for (auto& seen : worker_seen_)
        std::fill(seen.begin(), seen.end(), 0);
    std::fill(worker_distinct_records_.begin(), worker_distinct_records_.end(), 0);
}

nlohmann::json ReadProgress::event(int epoch, int generation, std::int64_t now_ns) {
    last_event_ns_ = now_ns;
    std::vector<std::int64_t> workers;
    for (std::int64_t records : worker_distinct_records_)
        workers.push_back(records * record_bytes_);
    return {{"event", "progress"},
            {"boot_ns", now_ns},
            {"epoch", epoch},
            {"generation", generation},
            {"bytes_read", bytes_read_},
            {"distinct_bytes", distinct_records_ * record_bytes_},
            {"workers", workers}};
}

} // namespace loaderlens::probes
