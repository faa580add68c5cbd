// SPDX-License-Identifier: MIT
// The reading bench's baselines, plain SQL through SQLite's C API (no loaderlens reader code):
// 1. The poll before cursors: what came after a time, per table, by a time-based query
//    `... WHERE t_ms > ? ORDER BY t_ms, process_id` over fast_samples and rollup_samples, and
//    residency the way the old reader decoded it: every cache_residency and mapped_residency row
//    from t = 0 in time order, each stored BLOB decoded, to know the vectors in force.
// 2. A full read by SQLite itself: every row and column of every table stepped through, the
//    least any reader of the whole file pays; and SELECT count(*) per table, for reference.
#pragma once

#include "loaderlens/residency.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

struct sqlite3;

namespace loaderlens::bench {

struct SqliteClose {
    void operator()(sqlite3* db) const;
};
using SqliteHandle = std::unique_ptr<sqlite3, SqliteClose>;
// Read-only; throws SetupError when it cannot.
SqliteHandle open_read_only(const std::string& path);

// What the time-based poll returned, with each part's wall time (ms).
struct TimeQueryPoll {
    std::size_t fast = 0, rollup = 0, cache = 0;
    // The mapped rows after `since`, with the vectors in force, by (t_ms, process_id).
    std::map<std::pair<std::int64_t, std::int64_t>, BucketCounts> mapped;
    std::size_t blobs_decoded = 0;
    double fast_ms = 0, rollup_ms = 0, residency_ms = 0;
    double total_ms() const { return fast_ms + rollup_ms + residency_ms; }
};
TimeQueryPoll time_query_poll(sqlite3* db, std::int64_t since_ms);

struct FullRead {
    std::size_t tables = 0, rows = 0, values = 0;
    std::uint64_t checksum = 0; // of every value read, so that no read can be skipped
};
FullRead step_every_row(sqlite3* db);
FullRead step_table(sqlite3* db, const std::string& table);
std::vector<std::string> table_names(sqlite3* db);
// Rows of a residency table that hold a bucket vector (not NULL), and its rows.
std::pair<std::size_t, std::size_t> stored_vectors(sqlite3* db, const char* table);
// SELECT count(*) of every table: rows in all.
std::size_t count_every_table(sqlite3* db);

} // namespace loaderlens::bench
