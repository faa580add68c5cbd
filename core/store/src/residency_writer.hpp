// SPDX-License-Identifier: MIT
// Writes the residency tier's samples into a recording. Bucket vectors are stored as BLOBs of
// little-endian int32, and only when they changed since the series' previous row (NULL = same as
// before) or at a keyframe: a worker whose mapping stands still costs a few bytes per sample, not
// a KiB, and a reader that starts anywhere finds each vector within a keyframe interval.
#pragma once

#include "loaderlens/residency.hpp"
#include "loaderlens/sqlite.hpp"

#include <map>
#include <utility>

namespace loaderlens {

// A series (a file's cache, a process's mapping of a file) stores its whole vector at least
// once every this many rows (schema 4).
inline constexpr int residency_keyframe_rows = 32;

class ResidencyWriter {
  public:
    explicit ResidencyWriter(sql::Database& db);
    void write(std::int64_t t_ms, const ResidencySample& sample);

  private:
    struct StoredBuckets {
        BucketCounts buckets;      // the series' last stored vector
        int rows_since_stored = 0; // rows written NULL since
    };
    void bind_buckets(sql::Statement& statement, int index, const BucketCounts& buckets,
                      StoredBuckets& last);

    sql::Statement file_, cache_, mapped_;
    std::map<std::int64_t, std::pair<StoredBuckets, StoredBuckets>> last_cache_; // cached, evicted
    std::map<std::pair<std::int64_t, std::int64_t>, StoredBuckets> last_mapped_;
};

} // namespace loaderlens
