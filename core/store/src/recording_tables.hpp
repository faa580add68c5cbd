// SPDX-License-Identifier: MIT
// The recording's tables, once: the writer creates them and inserts by these column names, the
// reader selects by them and checks a file against them (private to the store layer). Schema
// history and each column's meaning: docs/recording.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loaderlens::recording_tables {

// 2: loader_epochs, loader_workers; 3: loader_progress, residency_files, cache_residency,
// mapped_residency; 4: processes.revision (raised each time a row is written), four
// system_samples columns, bucket keyframes in the residency tables; 5: mapped_residency's
// computed PSS and outside sharers, rollup_samples.age_ms (a reading kept while nothing moved);
// 6: rollup_samples.pss_computed_kb (a composite row: the data files' share from pagemap);
// 7: parts and part_meta (a merged recording's inputs), a part column in the tables of processes
// and of node-wide rows (NULL outside a merged recording); 8: objects.executable (some process
// mapped the object with execute permission: code, not data); 9: cache_residency.read_buckets and
// carried_age_ms (buckets read at the sample; the others carry an older read).
inline constexpr int schema_version = 9;

struct Column {
    const char* name;
    const char* type;
    int since = 1; // the schema that added it: absent (read as NULL) in older recordings
};

struct Table {
    const char* name;
    int since;
    std::vector<Column> columns;
    const char* constraints = ""; // appended to the column list in CREATE TABLE
};

inline const std::vector<Table>& all() {
    static const std::vector<Table> tables{
        {"meta", 1, {{"key", "TEXT PRIMARY KEY"}, {"value", "TEXT NOT NULL"}}},
        {"processes",
         1,
         {{"id", "INTEGER PRIMARY KEY"},
          {"pid", "INTEGER NOT NULL"},
          {"start_ticks", "INTEGER NOT NULL"},
          {"ppid", "INTEGER"},
          {"parent_id", "INTEGER"},
          {"comm", "TEXT"},
          {"cmdline", "TEXT"},
          {"role", "TEXT NOT NULL"},
          {"slot", "INTEGER"},
          {"generation", "INTEGER"},
          {"birth_ms", "INTEGER"},
          {"exit_ms", "INTEGER"},
          {"exit_status", "INTEGER"},
          {"revision", "INTEGER NOT NULL DEFAULT 0", 4},
          {"part", "INTEGER", 7}}},
        {"fast_samples",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"process_id", "INTEGER NOT NULL"},
          {"rss_kb", "INTEGER"},
          {"anon_kb", "INTEGER"},
          {"file_kb", "INTEGER"},
          {"shmem_kb", "INTEGER"},
          {"swap_kb", "INTEGER"}}},
        {"rollup_samples",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"process_id", "INTEGER NOT NULL"},
          {"rss_kb", "INTEGER"},
          {"pss_kb", "INTEGER"},
          {"pss_anon_kb", "INTEGER"},
          {"pss_file_kb", "INTEGER"},
          {"pss_shmem_kb", "INTEGER"},
          {"shared_clean_kb", "INTEGER"},
          {"shared_dirty_kb", "INTEGER"},
          {"private_clean_kb", "INTEGER"},
          {"private_dirty_kb", "INTEGER"},
          {"swap_kb", "INTEGER"},
          {"swap_pss_kb", "INTEGER"},
          {"locked_kb", "INTEGER"},
          {"age_ms", "INTEGER", 5},
          {"pss_computed_kb", "INTEGER", 6}}},
        {"objects",
         1,
         {{"id", "INTEGER PRIMARY KEY"},
          {"kind", "TEXT NOT NULL"},
          {"path", "TEXT NOT NULL"},
          {"inode", "INTEGER NOT NULL"},
          {"size_bytes", "INTEGER"},
          {"executable", "INTEGER", 8}},
         ", UNIQUE(kind, path, inode)"},
        {"map_samples",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"process_id", "INTEGER NOT NULL"},
          {"object_id", "INTEGER NOT NULL"},
          {"size_kb", "INTEGER"},
          {"rss_kb", "INTEGER"},
          {"pss_kb", "INTEGER"},
          {"shared_clean_kb", "INTEGER"},
          {"shared_dirty_kb", "INTEGER"},
          {"private_clean_kb", "INTEGER"},
          {"private_dirty_kb", "INTEGER"},
          {"swap_kb", "INTEGER"}}},
        {"cgroup_samples",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"version", "TEXT"},
          {"path", "TEXT"},
          {"usage_kb", "INTEGER"},
          {"peak_kb", "INTEGER"},
          {"limit_kb", "INTEGER"},
          {"unlimited", "INTEGER"},
          {"anon_kb", "INTEGER"},
          {"file_kb", "INTEGER"},
          {"shmem_kb", "INTEGER"},
          {"file_mapped_kb", "INTEGER"},
          {"active_file_kb", "INTEGER"},
          {"inactive_file_kb", "INTEGER"},
          {"failcnt", "INTEGER"},
          {"oom_kill", "INTEGER"},
          {"part", "INTEGER", 7}}},
        {"system_samples",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"mem_total_kb", "INTEGER"},
          {"mem_available_kb", "INTEGER"},
          {"cached_kb", "INTEGER"},
          {"shmem_kb", "INTEGER"},
          {"dirty_kb", "INTEGER"},
          {"devshm_used_kb", "INTEGER"},
          {"devshm_size_kb", "INTEGER"},
          {"active_file_kb", "INTEGER", 4},
          {"inactive_file_kb", "INTEGER", 4},
          {"writeback_kb", "INTEGER", 4},
          {"kreclaimable_kb", "INTEGER", 4},
          {"part", "INTEGER", 7}}},
        {"markers",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"source", "TEXT NOT NULL"},
          {"text", "TEXT NOT NULL"},
          {"part", "INTEGER", 7}}},
        {"unavailable",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"process_id", "INTEGER NOT NULL"},
          {"tier", "TEXT NOT NULL"},
          {"reason", "TEXT NOT NULL"},
          {"part", "INTEGER", 7}}},
        {"loader_epochs",
         2,
         {{"epoch", "INTEGER NOT NULL"},
          {"generation", "INTEGER NOT NULL"},
          {"start_ms", "INTEGER NOT NULL"},
          {"end_ms", "INTEGER NOT NULL"},
          {"samples", "INTEGER NOT NULL"},
          {"batches", "INTEGER NOT NULL"},
          {"bytes_read", "INTEGER NOT NULL"},
          {"part", "INTEGER", 7}}},
        {"loader_workers",
         2,
         {{"worker", "INTEGER NOT NULL"},
          {"generation", "INTEGER NOT NULL"},
          {"epoch", "INTEGER NOT NULL"},
          {"pid", "INTEGER NOT NULL"},
          {"t_ms", "INTEGER NOT NULL"},
          {"process_id", "INTEGER"},
          {"part", "INTEGER", 7}}},
        {"loader_progress",
         3,
         {{"t_ms", "INTEGER NOT NULL"},
          {"epoch", "INTEGER NOT NULL"},
          {"generation", "INTEGER NOT NULL"},
          {"bytes_read", "INTEGER NOT NULL"},
          {"distinct_bytes", "INTEGER NOT NULL"},
          {"workers", "TEXT NOT NULL"},
          {"part", "INTEGER", 7}}},
        {"residency_files",
         3,
         {{"id", "INTEGER PRIMARY KEY"},
          {"path", "TEXT NOT NULL"},
          {"device", "INTEGER NOT NULL"},
          {"inode", "INTEGER NOT NULL"},
          {"size_bytes", "INTEGER NOT NULL"},
          {"page_size", "INTEGER NOT NULL"},
          {"buckets", "INTEGER NOT NULL"},
          {"bucket_pages", "INTEGER NOT NULL"},
          {"method", "TEXT NOT NULL"},
          {"unavailable_reason", "TEXT"},
          {"requested", "INTEGER NOT NULL"},
          {"first_ms", "INTEGER NOT NULL"},
          {"part", "INTEGER", 7}}},
        {"cache_residency",
         3,
         {{"t_ms", "INTEGER NOT NULL"},
          {"file_id", "INTEGER NOT NULL"},
          {"cached", "INTEGER NOT NULL"},
          {"dirty", "INTEGER"},
          {"writeback", "INTEGER"},
          {"evicted", "INTEGER"},
          {"recently_evicted", "INTEGER"},
          {"buckets", "BLOB"},
          {"evicted_buckets", "BLOB"},
          {"read_buckets", "INTEGER", 9},
          {"carried_age_ms", "INTEGER", 9}}},
        {"mapped_residency",
         3,
         {{"t_ms", "INTEGER NOT NULL"},
          {"file_id", "INTEGER NOT NULL"},
          {"process_id", "INTEGER NOT NULL"},
          {"mapped_pages", "INTEGER NOT NULL"},
          {"present_pages", "INTEGER NOT NULL"},
          {"buckets", "BLOB"},
          {"pss_kb", "INTEGER", 5},
          {"outside_sharers", "INTEGER", 5},
          {"outside_unreadable", "INTEGER", 5}}},
        {"tier_stats",
         1,
         {{"t_ms", "INTEGER NOT NULL"},
          {"tier", "TEXT NOT NULL"},
          {"interval_ms", "INTEGER NOT NULL"},
          {"cpu_us_per_run", "REAL NOT NULL"},
          {"processes", "INTEGER NOT NULL"},
          {"part", "INTEGER", 7}}},
        // A merged recording's inputs (loaderlens merge): one row each, and each input's own meta.
        {"parts",
         7,
         {{"id", "INTEGER PRIMARY KEY"},
          {"name", "TEXT NOT NULL"},
          {"host", "TEXT NOT NULL"},
          {"slurm_job_id", "TEXT NOT NULL"},
          {"slurm_step_id", "TEXT NOT NULL"},
          {"slurm_task_id", "TEXT NOT NULL"},
          {"source", "TEXT NOT NULL"},
          {"schema", "INTEGER NOT NULL"},
          {"start_unix_ns", "INTEGER NOT NULL"},
          {"offset_ms", "INTEGER NOT NULL"},
          {"duration_ms", "INTEGER NOT NULL"},
          {"last_sample_ms", "INTEGER NOT NULL"},
          {"end_state", "TEXT NOT NULL"}},
         ", UNIQUE(name)"},
        {"part_meta",
         7,
         {{"part", "INTEGER NOT NULL"}, {"key", "TEXT NOT NULL"}, {"value", "TEXT NOT NULL"}},
         ", PRIMARY KEY(part, key)"},
    };
    return tables;
}

inline const Table& table(std::string_view name) {
    for (const Table& t : all())
        if (name == t.name) return t;
    throw std::logic_error("no recording table " + std::string(name));
}

// CREATE TABLE statements of every table, at the current schema.
inline std::string create_sql() {
    std::string sql;
    for (const Table& t : all()) {
        sql += "CREATE TABLE " + std::string(t.name) + "(";
        for (std::size_t i = 0; i < t.columns.size(); ++i)
            sql += (i ? ", " : "") + std::string(t.columns[i].name) + " " + t.columns[i].type;
        sql += std::string(t.constraints) + ");\n";
    }
    return sql;
}

// INSERT INTO name(every column but those listed in `skip`) VALUES(?, ...): bound in the
// catalogue's order, from 1.
inline std::string insert_sql(std::string_view name,
                              std::initializer_list<std::string_view> skip = {}) {
    const Table& t = table(name);
    std::string columns, values;
    for (const Column& c : t.columns) {
        if (std::find(skip.begin(), skip.end(), std::string_view(c.name)) != skip.end()) continue;
        columns += (columns.empty() ? "" : ", ") + std::string(c.name);
        values += values.empty() ? "?" : ", ?";
    }
    return "INSERT INTO " + std::string(name) + "(" + columns + ") VALUES(" + values + ")";
}

// The columns of `name` to SELECT from a recording of schema `schema`, in the catalogue's order,
// "rowid" first: a column newer than the file is selected as NULL.
inline std::string select_columns(std::string_view name, std::int64_t schema) {
    std::string out = "rowid";
    for (const Column& c : table(name).columns)
        out += ", " + (schema >= c.since ? std::string(c.name) : "NULL");
    return out;
}

} // namespace loaderlens::recording_tables
