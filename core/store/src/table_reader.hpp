// SPDX-License-Identifier: MIT
// Reads the rows of each recording table past a rowid into RecordingData (private to the store
// layer; Recording::read_new drives it inside one read transaction). Columns by name, from
// recording_tables.hpp; statements prepared once per table.
#pragma once

#include "loaderlens/cursor.hpp"
#include "loaderlens/recording_data.hpp"
#include "loaderlens/sqlite.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace loaderlens {

class TableReader {
  public:
    TableReader(sql::Database& db, std::int64_t schema) : db_(db), schema_(schema) {}

    // Each reads what is past the cursor into `out` and moves the cursor past it.
    void processes(Cursor& cursor, RecordingData& out);
    void objects(Cursor& cursor, RecordingData& out);
    void fast(Cursor& cursor, RecordingData& out);
    void rollup(Cursor& cursor, RecordingData& out);
    void maps(Cursor& cursor, RecordingData& out);
    void cgroup(Cursor& cursor, RecordingData& out);
    void system(Cursor& cursor, RecordingData& out);
    void markers(Cursor& cursor, RecordingData& out);
    void unavailable(Cursor& cursor, RecordingData& out);
    void tier_stats(Cursor& cursor, RecordingData& out);
    void loader(Cursor& cursor, RecordingData& out);
    // mapped_residency rows without their bucket vectors (ReadScope); the cursor's
    // residency_files must hold their files (read first by ResidencyDecoder).
    void mapped_figures(Cursor& cursor, RecordingData& out);
    void meta(RecordingData& out);
    void parts(Cursor& cursor, RecordingData& out);
    // The highest rowid of `table` now (0 when empty or absent in this schema).
    std::int64_t last_rowid(const char* table);
    // Schema 7: from now on, only the rows of a merged recording's part `part` (its processes,
    // their samples, its node-wide rows); 0: every row again.
    void filter_part(int part);
    bool filtering() const { return part_ != 0; }

    // Rows past the cursor's rowid of `table`, in rowid order, each handed to decode(statement)
    // (column 0 is the rowid, the table's columns from 1); the cursor moves past them.
    template <typename Decode> void past(Cursor& cursor, const char* table, Decode&& decode) {
        std::int64_t& up_to = cursor.read_up_to[table];
        select(table, "rowid > ?", up_to, "rowid", [&](sql::Statement& q) {
            up_to = std::max(up_to, q.int64(0));
            decode(q);
        });
    }

    // The same, rows appended to `rows`, reserved first: growing a vector of a million rows
    // step by step moved most of them several times (bench/ reading: 1.55 s -> 0.83 s).
    template <typename Row, typename Decode>
    void past(Cursor& cursor, const char* table, std::vector<Row>& rows, Decode&& decode) {
        const std::int64_t up_to = cursor.read_up_to[table], last = last_rowid(table);
        if (last > up_to && !filtering()) // a part's rows are a share of them: no guess
            rows.reserve(rows.size() + static_cast<std::size_t>(last - up_to));
        past(cursor, table, [&](sql::Statement& q) { rows.push_back(decode(q)); });
    }

  private:
    // Runs SELECT rowid, <columns> FROM table WHERE <where> ORDER BY <order> with `value` bound,
    // calling decode(statement) per row.
    template <typename Decode>
    void select(const char* table, const char* where, std::int64_t value, const char* order,
                Decode&& decode) {
        if (!has(table)) return;
        sql::Statement& q = statement(table, where, order);
        q.reset();
        q.bind(1, value);
        while (q.step())
            decode(q);
        q.reset();
    }
    // SELECT rowid, <columns> FROM table WHERE <where> ORDER BY <order>, prepared once.
    sql::Statement& statement(const char* table, const char* where, const char* order);
    bool has(const char* table) const;

    // The condition on `table`'s rows that keeps those of part_ (empty: not filtered).
    std::string part_condition(const char* table) const;

    sql::Database& db_;
    std::int64_t schema_;
    int part_ = 0;
    std::map<std::string, sql::Statement> statements_;
};

} // namespace loaderlens
