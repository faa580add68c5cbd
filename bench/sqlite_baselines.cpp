// SPDX-License-Identifier: MIT
#include "sqlite_baselines.hpp"

#include "targets.hpp"

#include <array>
#include <chrono>
#include <cstring>
#include <sqlite3.h>

namespace loaderlens::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

class Query {
  public:
    Query(sqlite3* db, const std::string& sql) {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
            throw SetupError("cannot prepare " + sql + ": " + sqlite3_errmsg(db));
    }
    ~Query() { sqlite3_finalize(stmt_); }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;
    bool step() {
        const int rc = sqlite3_step(stmt_);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            throw SetupError(std::string("sqlite3_step: ") +
                             sqlite3_errmsg(sqlite3_db_handle(stmt_)));
        return rc == SQLITE_ROW;
    }
    sqlite3_stmt* get() const { return stmt_; }
    std::optional<std::int64_t> optional(int i) const {
        if (sqlite3_column_type(stmt_, i) == SQLITE_NULL) return std::nullopt;
        return sqlite3_column_int64(stmt_, i);
    }

  private:
    sqlite3_stmt* stmt_ = nullptr;
};

// Rows after `since_ms` of a per-process table, each column kept as the old reader kept it
// (NULL = unavailable).
template <std::size_t Columns>
std::size_t rows_after(sqlite3* db, const char* table, const char* columns, std::int64_t since) {
    Query q(db, std::string("SELECT t_ms, process_id, ") + columns + " FROM " + table +
                    " WHERE t_ms > ? ORDER BY t_ms, process_id");
    sqlite3_bind_int64(q.get(), 1, since);
    std::vector<std::array<std::optional<std::int64_t>, Columns + 2>> rows;
    while (q.step()) {
        auto& row = rows.emplace_back();
        for (std::size_t i = 0; i < row.size(); ++i)
            row[i] = q.optional(static_cast<int>(i));
    }
    return rows.size();
}

BucketCounts decode(sqlite3_stmt* q, int column) {
    const auto bytes = static_cast<std::size_t>(sqlite3_column_bytes(q, column));
    BucketCounts out(bytes / sizeof(std::int32_t));
    if (bytes) std::memcpy(out.data(), sqlite3_column_blob(q, column), bytes);
    return out;
}

} // namespace

void SqliteClose::operator()(sqlite3* db) const {
    sqlite3_close(db);
}

SqliteHandle open_read_only(const std::string& path) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    SqliteHandle handle(db);
    if (rc != SQLITE_OK)
        throw SetupError("cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : "no memory"));
    return handle;
}

TimeQueryPoll time_query_poll(sqlite3* db, std::int64_t since) {
    TimeQueryPoll out;
    auto start = Clock::now();
    out.fast =
        rows_after<5>(db, "fast_samples", "rss_kb, anon_kb, file_kb, shmem_kb, swap_kb", since);
    out.fast_ms = ms_since(start);
    start = Clock::now();
    out.rollup = rows_after<12>(db, "rollup_samples",
                                "rss_kb, pss_kb, pss_anon_kb, pss_file_kb, pss_shmem_kb, "
                                "shared_clean_kb, shared_dirty_kb, private_clean_kb, "
                                "private_dirty_kb, swap_kb, swap_pss_kb, locked_kb",
                                since);
    out.rollup_ms = ms_since(start);

    // Residency: a stored vector holds until the series' next stored one (NULL = unchanged), so
    // the vectors in force after `since` are known only by decoding from the first row on.
    start = Clock::now();
    {
        Query q(db, "SELECT t_ms, file_id, cached, dirty, writeback, evicted, recently_evicted, "
                    "buckets, evicted_buckets FROM cache_residency ORDER BY t_ms, file_id");
        std::map<std::int64_t, std::pair<BucketCounts, BucketCounts>> in_force;
        std::vector<std::pair<BucketCounts, BucketCounts>> rows;
        while (q.step()) {
            auto& [cached, evicted] = in_force[sqlite3_column_int64(q.get(), 1)];
            if (sqlite3_column_type(q.get(), 7) == SQLITE_BLOB) {
                cached = decode(q.get(), 7);
                ++out.blobs_decoded;
            }
            if (sqlite3_column_type(q.get(), 8) == SQLITE_BLOB) {
                evicted = decode(q.get(), 8);
                ++out.blobs_decoded;
            }
            if (sqlite3_column_int64(q.get(), 0) > since) rows.emplace_back(cached, evicted);
        }
        out.cache = rows.size();
    }
    {
        Query q(db, "SELECT t_ms, file_id, process_id, mapped_pages, present_pages, buckets FROM "
                    "mapped_residency ORDER BY t_ms, process_id");
        std::map<std::pair<std::int64_t, std::int64_t>, BucketCounts> in_force;
        while (q.step()) {
            const std::int64_t t = sqlite3_column_int64(q.get(), 0),
                               process = sqlite3_column_int64(q.get(), 2);
            BucketCounts& buckets = in_force[{sqlite3_column_int64(q.get(), 1), process}];
            if (sqlite3_column_type(q.get(), 5) == SQLITE_BLOB) {
                buckets = decode(q.get(), 5);
                ++out.blobs_decoded;
            }
            if (t > since) out.mapped[{t, process}] = buckets;
        }
    }
    out.residency_ms = ms_since(start);
    return out;
}

std::vector<std::string> table_names(sqlite3* db) {
    std::vector<std::string> tables;
    Query q(db, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name");
    while (q.step())
        tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)));
    return tables;
}

FullRead step_table(sqlite3* db, const std::string& table) {
    FullRead out{.tables = 1};
    Query q(db, "SELECT * FROM " + table);
    const int columns = sqlite3_column_count(q.get());
    while (q.step()) {
        ++out.rows;
        for (int i = 0; i < columns; ++i, ++out.values) {
            switch (sqlite3_column_type(q.get(), i)) {
            case SQLITE_INTEGER:
                out.checksum += static_cast<std::uint64_t>(sqlite3_column_int64(q.get(), i));
                break;
            case SQLITE_FLOAT:
                out.checksum += static_cast<std::uint64_t>(sqlite3_column_double(q.get(), i));
                break;
            case SQLITE_TEXT:
            case SQLITE_BLOB: {
                const auto* data =
                    static_cast<const unsigned char*>(sqlite3_column_blob(q.get(), i));
                const int bytes = sqlite3_column_bytes(q.get(), i);
                out.checksum += static_cast<std::uint64_t>(bytes) + (bytes ? data[0] : 0);
                break;
            }
            default:
                break;
            }
        }
    }
    return out;
}

FullRead step_every_row(sqlite3* db) {
    FullRead out;
    for (const std::string& table : table_names(db)) {
        const FullRead one = step_table(db, table);
        out.tables += 1;
        out.rows += one.rows;
        out.values += one.values;
        out.checksum += one.checksum;
    }
    return out;
}

std::pair<std::size_t, std::size_t> stored_vectors(sqlite3* db, const char* table) {
    Query q(db, std::string("SELECT count(buckets), count(*) FROM ") + table);
    q.step();
    return {static_cast<std::size_t>(sqlite3_column_int64(q.get(), 0)),
            static_cast<std::size_t>(sqlite3_column_int64(q.get(), 1))};
}

std::size_t count_every_table(sqlite3* db) {
    std::size_t rows = 0;
    for (const std::string& table : table_names(db)) {
        Query q(db, "SELECT count(*) FROM " + table);
        q.step();
        rows += static_cast<std::size_t>(sqlite3_column_int64(q.get(), 0));
    }
    return rows;
}

} // namespace loaderlens::bench
