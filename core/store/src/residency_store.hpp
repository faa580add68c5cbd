// SPDX-License-Identifier: MIT
// Writes the residency tier's samples into a recording. Bucket vectors are stored as BLOBs of
// little-endian int32, and only when they changed since the series' previous row (NULL = same as
// before): a worker whose mapping stands still costs a few bytes per sample, not a KiB.
#pragma once

#include "loaderlens/residency.hpp"
#include "loaderlens/sqlite.hpp"

#include <map>
#include <utility>

namespace loaderlens {

class ResidencyWriter {
  public:
    explicit ResidencyWriter(sql::Database& db);
    void write(std::int64_t t_ms, const ResidencySample& sample);

  private:
    void bind_buckets(sql::Statement& statement, int index, const BucketCounts& buckets,
                      BucketCounts& last);

    sql::Statement file_, cache_, mapped_;
    std::map<std::int64_t, std::pair<BucketCounts, BucketCounts>> last_cache_; // cached, evicted
    std::map<std::pair<std::int64_t, std::int64_t>, BucketCounts> last_mapped_;
};

} // namespace loaderlens
