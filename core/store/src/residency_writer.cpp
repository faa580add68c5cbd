// SPDX-License-Identifier: MIT
#include "residency_writer.hpp"

#include "recording_tables.hpp"
#include "row_writer.hpp"

#include <bit>

namespace loaderlens {

namespace {
Kib widen(const std::optional<std::int32_t>& count) {
    return count ? Kib(*count) : Kib();
}
} // namespace

static_assert(std::endian::native == std::endian::little,
              "bucket BLOBs are little-endian int32 (docs/recording.md)");

ResidencyWriter::ResidencyWriter(sql::Database& db)
    : file_(db.prepare(recording_tables::insert_sql("residency_files"))),
      cache_(db.prepare(recording_tables::insert_sql("cache_residency"))),
      mapped_(db.prepare(recording_tables::insert_sql("mapped_residency"))) {}

void ResidencyWriter::bind_buckets(sql::Statement& statement, int index,
                                   const BucketCounts& buckets, StoredBuckets& last) {
    // Unchanged: NULL, except every residency_keyframe_rows-th row of the series, which stores
    // the vector again so that a reader starting there need not walk back to the series' start.
    if (buckets == last.buckets && !buckets.empty() &&
        ++last.rows_since_stored < residency_keyframe_rows) {
        statement.bind_null(index);
        return;
    }
    statement.bind_blob(index, buckets.data(), buckets.size() * sizeof(std::int32_t));
    last.buckets = buckets;
    last.rows_since_stored = 0;
}

void ResidencyWriter::write(std::int64_t t_ms, const ResidencySample& sample) {
    for (const ResidencyFile& f : sample.new_files) {
        file_.bind(1, f.id).bind(2, f.path);
        file_.bind(3, static_cast<std::int64_t>(f.device))
            .bind(4, static_cast<std::int64_t>(f.inode));
        file_.bind(5, f.size_bytes).bind(6, f.page_size);
        file_.bind(7, std::int64_t{f.layout.count}).bind(8, f.layout.bucket_pages);
        file_.bind(9, std::string(to_string(f.method)));
        if (f.unavailable_reason.empty())
            file_.bind_null(10);
        else
            file_.bind(10, f.unavailable_reason);
        file_.bind(11, std::int64_t{f.requested}).bind(12, t_ms);
        bind_part(file_, 13, f.part);
        file_.run();
    }
    for (const CacheResidency& c : sample.cache) {
        auto& [last_cached, last_evicted] = last_cache_[c.file_id];
        cache_.bind(1, t_ms).bind(2, c.file_id).bind(3, c.totals.cached);
        cache_.bind(4, Kib(c.totals.dirty)).bind(5, Kib(c.totals.writeback));
        cache_.bind(6, Kib(c.totals.evicted)).bind(7, Kib(c.totals.recently_evicted));
        bind_buckets(cache_, 8, c.buckets, last_cached);
        if (c.evicted_buckets.empty())
            cache_.bind_null(9);
        else
            bind_buckets(cache_, 9, c.evicted_buckets, last_evicted);
        cache_.bind(10, c.read_buckets ? Kib(*c.read_buckets) : Kib())
            .bind(11, Kib(c.carried_age_ms));
        cache_.run();
    }
    for (const MappedResidency& m : sample.mapped) {
        mapped_.bind(1, t_ms).bind(2, m.file_id).bind(3, m.process_id);
        mapped_.bind(4, m.mapped_pages).bind(5, m.present_pages);
        bind_buckets(mapped_, 6, m.buckets, last_mapped_[{m.file_id, m.process_id}]);
        mapped_.bind(7, m.pss_kb).bind(8, widen(m.outside_sharers));
        mapped_.bind(9, widen(m.outside_unreadable)).run();
    }
}

} // namespace loaderlens
