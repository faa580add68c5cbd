// SPDX-License-Identifier: MIT
// The tables and columns the reader reads, checked when a recording is opened: a table rebuilt
// without a column, or dropped, makes the recording damaged (one line naming the file, the table
// and the column) instead of failing halfway through a report or being read shifted.
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"

#include <algorithm>
#include <sstream>
#include <string>

namespace loaderlens::recording_schema {

struct ReadTable {
    const char* name;
    int since_schema;    // the schema version that added it: required from there on
    const char* columns; // the columns the reader selects, by name, separated by spaces
};

inline constexpr ReadTable read_tables[] = {
    {"meta", 1, "key value"},
    {"processes", 1,
     "id pid start_ticks ppid parent_id comm cmdline role slot generation birth_ms exit_ms "
     "exit_status"},
    {"fast_samples", 1, "t_ms process_id rss_kb anon_kb file_kb shmem_kb swap_kb"},
    {"rollup_samples", 1,
     "t_ms process_id rss_kb pss_kb pss_anon_kb pss_file_kb pss_shmem_kb shared_clean_kb "
     "shared_dirty_kb private_clean_kb private_dirty_kb swap_kb swap_pss_kb locked_kb"},
    {"objects", 1, "id kind path inode size_bytes"},
    {"map_samples", 1,
     "t_ms process_id object_id size_kb rss_kb pss_kb shared_clean_kb shared_dirty_kb "
     "private_clean_kb private_dirty_kb swap_kb"},
    {"cgroup_samples", 1,
     "t_ms version path usage_kb peak_kb limit_kb unlimited anon_kb file_kb shmem_kb "
     "file_mapped_kb active_file_kb inactive_file_kb failcnt oom_kill"},
    {"system_samples", 1,
     "t_ms mem_total_kb mem_available_kb cached_kb shmem_kb dirty_kb devshm_used_kb "
     "devshm_size_kb"},
    {"markers", 1, "t_ms source text"},
    {"unavailable", 1, "t_ms process_id tier reason"},
    {"tier_stats", 1, "t_ms tier interval_ms cpu_us_per_run processes"},
    {"loader_epochs", 2, "epoch generation start_ms end_ms samples batches bytes_read"},
    {"loader_workers", 2, "worker generation epoch pid t_ms"},
    {"loader_progress", 3, "t_ms epoch generation bytes_read distinct_bytes workers"},
    {"residency_files", 3,
     "id path device inode size_bytes page_size buckets bucket_pages method unavailable_reason "
     "requested first_ms"},
    {"cache_residency", 3,
     "t_ms file_id cached dirty writeback evicted recently_evicted buckets evicted_buckets"},
    {"mapped_residency", 3, "t_ms file_id process_id mapped_pages present_pages buckets"},
};

// Throws RecordingError naming `path` for the first table the reader needs that is missing (the
// tables added after `schema` may be absent) or lacks a column it selects.
inline void check(sql::Database& db, const std::string& path, std::int64_t schema) {
    for (const ReadTable& table : read_tables) {
        const std::vector<std::string> present = db.column_names(table.name);
        if (present.empty()) {
            // An older recording is read without the tables of newer schemas.
            if (table.since_schema > 1 && schema < table.since_schema) continue;
            throw RecordingError(path + ": recording is damaged: table " + table.name +
                                 " is missing");
        }
        std::istringstream wanted(table.columns);
        for (std::string column; wanted >> column;)
            if (std::find(present.begin(), present.end(), column) == present.end())
                throw RecordingError(path + ": recording is damaged: table " + table.name +
                                     " has no column " + column);
    }
}

// Values read elsewhere (loader_run.cpp parses each loader_progress.workers into a vector, and the
// JSON report writes them all): a JSON array of one figure per worker, up to 4096 workers, is far
// below this bound; a longer text is damage, refused here before anything parses it.
inline void check_values(sql::Database& db, const std::string& path) {
    constexpr std::int64_t longest_workers = 128 * 1024;
    if (!db.has_table("loader_progress")) return;
    auto q = db.prepare("SELECT rowid, length(workers) FROM loader_progress WHERE "
                        "length(workers) > ? LIMIT 1");
    q.bind(1, longest_workers);
    if (q.step())
        throw RecordingError(path + ": recording is damaged: loader_progress.workers of row " +
                             std::to_string(q.int64(0)) + " holds " + std::to_string(q.int64(1)) +
                             " characters, more than one figure per worker of any loader");
}

} // namespace loaderlens::recording_schema
