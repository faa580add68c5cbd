// SPDX-License-Identifier: MIT
#include "table_reader.hpp"

#include "recording_read.hpp"
#include "recording_tables.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace loaderlens {

bool TableReader::has(const char* table) const {
    return schema_ >= recording_tables::table(table).since;
}

sql::Statement& TableReader::statement(const char* table, const char* where, const char* order) {
    const std::string filter = part_condition(table);
    const std::string key =
        std::string(table) + where + order + (filter.empty() ? "" : "#" + filter);
    auto it = statements_.find(key);
    if (it == statements_.end())
        it = statements_
                 .emplace(key, db_.prepare(
                                   "SELECT " + recording_tables::select_columns(table, schema_) +
                                   " FROM " + table + " WHERE (" + where + ")" +
                                   (filter.empty() ? "" : " AND " + filter) + " ORDER BY " + order))
                 .first;
    return it->second;
}

void TableReader::filter_part(int part) {
    // A part's statements are of no use for another: the cache keeps the unfiltered ones only.
    std::erase_if(statements_,
                  [](const auto& entry) { return entry.first.find('#') != std::string::npos; });
    part_ = part;
}

std::string TableReader::part_condition(const char* table) const {
    if (part_ == 0) return {};
    const std::string table_name(table), part = std::to_string(part_);
    const std::string processes =
        "process_id IN (SELECT id FROM processes WHERE part = " + part + ")";
    // Objects are names, shared by the parts: all of them (few; a report keeps those mapped).
    if (table_name == "meta" || table_name == "parts" || table_name == "part_meta" ||
        table_name == "objects")
        return {};
    if (table_name == "fast_samples" || table_name == "rollup_samples" ||
        table_name == "map_samples" || table_name == "mapped_residency")
        return processes;
    if (table_name == "cache_residency")
        return "file_id IN (SELECT id FROM residency_files WHERE part = " + part + ")";
    return "part = " + part; // the tables with a part column
}

std::int64_t TableReader::last_rowid(const char* table) {
    if (!has(table)) return 0;
    auto q = db_.prepare(std::string("SELECT max(rowid) FROM ") + table);
    q.step();
    return q.optional_int64(0).value_or(0);
}

namespace {

// A part id (schema 7; NULL before it and outside a merged recording: 0). A negative or huge one
// is damage, not an id a merge wrote.
int part_of(const sql::Statement& q, int column) {
    const Kib part = q.optional_int64(column);
    if (part && (*part < 0 || *part > INT32_MAX))
        throw sql::Error("a part id of " + std::to_string(*part), sql::error_mismatch);
    return static_cast<int>(part.value_or(0));
}

ProcessInfo decode_process(const sql::Statement& q) {
    ProcessInfo p;
    p.id = q.int64(1);
    p.key = {static_cast<pid_t>(q.int64(2)), static_cast<std::uint64_t>(q.int64(3))};
    p.ppid = static_cast<pid_t>(q.int64(4));
    p.parent_id = q.int64(5);
    p.comm = q.text(6);
    p.cmdline = q.text(7);
    p.role = role_from_string(q.text(8)).value_or(Role::helper);
    p.slot = static_cast<int>(q.optional_int64(9).value_or(-1));
    p.generation = static_cast<int>(q.optional_int64(10).value_or(-1));
    p.birth_ms = q.int64(11);
    p.exit_ms = q.optional_int64(12);
    if (auto status = q.optional_int64(13)) p.exit_status = static_cast<int>(*status);
    p.part = part_of(q, 15);
    return p;
}

// Columns first..first+n-1 into `fields`, NULL as unavailable.
template <std::size_t N>
void optional_columns(const sql::Statement& q, int first, Kib* (&&fields)[N]) {
    for (std::size_t i = 0; i < N; ++i)
        *fields[i] = q.optional_int64(first + static_cast<int>(i));
}

} // namespace

// Schema 4 gives each process row a revision, raised whenever the row is written: a reader gets
// births and every later change (exit, role, slot, rename). Older files are read whole.
void TableReader::processes(Cursor& cursor, RecordingData& out) {
    const bool revisions = schema_ >= 4;
    select("processes", revisions ? "revision > ?" : "? IS NOT NULL", cursor.process_revision, "id",
           [&](sql::Statement& q) {
               out.processes.push_back(decode_process(q));
               if (revisions)
                   cursor.process_revision = std::max(cursor.process_revision, q.int64(14));
           });
}

void TableReader::objects(Cursor& cursor, RecordingData& out) {
    past(cursor, "objects", [&](sql::Statement& q) {
        const std::int64_t id = q.int64(1);
        const Kib executable = q.optional_int64(6); // NULL before schema 8
        out.objects.push_back({id, mapping_kind_from_string(q.text(2)).value_or(MappingKind::other),
                               checked_path(q.text(3), "objects", id),
                               static_cast<std::uint64_t>(q.int64(4)), q.optional_int64(5),
                               executable ? std::optional<bool>(*executable != 0) : std::nullopt});
    });
}

void TableReader::fast(Cursor& cursor, RecordingData& out) {
    past(cursor, "fast_samples", out.fast, [&](sql::Statement& q) {
        FastSample s{.process_id = q.int64(2)};
        optional_columns(q, 3, {&s.rss, &s.rss_anon, &s.rss_file, &s.rss_shmem, &s.swap});
        return Timed<FastSample>{q.int64(1), s};
    });
}

void TableReader::rollup(Cursor& cursor, RecordingData& out) {
    past(cursor, "rollup_samples", out.rollup, [&](sql::Statement& q) {
        RollupSample r;
        r.process_id = q.int64(2);
        optional_columns(q, 3,
                         {&r.rss, &r.pss, &r.pss_anon, &r.pss_file, &r.pss_shmem, &r.shared_clean,
                          &r.shared_dirty, &r.private_clean, &r.private_dirty, &r.swap, &r.swap_pss,
                          &r.locked});
        r.age_ms = q.optional_int64(15).value_or(0); // NULL before schema 5: read then
        if (r.age_ms < 0)
            throw sql::Error("rollup_samples.age_ms: " + std::to_string(r.age_ms),
                             sql::error_mismatch);
        r.pss_computed = q.optional_int64(16); // NULL before schema 6, and in rows read whole
        if (r.pss_computed && *r.pss_computed < 0)
            throw sql::Error("rollup_samples.pss_computed_kb: " + std::to_string(*r.pss_computed),
                             sql::error_mismatch);
        return Timed<RollupSample>{q.int64(1), r};
    });
}

void TableReader::maps(Cursor& cursor, RecordingData& out) {
    past(cursor, "map_samples", out.maps, [&](sql::Statement& q) {
        MapRow row{q.int64(1), q.int64(2), q.int64(3), {}};
        auto& f = row.figures;
        std::int64_t* fields[] = {&f.size_kb,          &f.rss_kb,          &f.pss_kb,
                                  &f.shared_clean_kb,  &f.shared_dirty_kb, &f.private_clean_kb,
                                  &f.private_dirty_kb, &f.swap_kb};
        for (int i = 0; i < 8; ++i)
            *fields[i] = q.int64(4 + i);
        return row;
    });
}

void TableReader::cgroup(Cursor& cursor, RecordingData& out) {
    past(cursor, "cgroup_samples", [&](sql::Statement& q) {
        CgroupSample c;
        c.version = q.text(2);
        c.path = q.text(3);
        optional_columns(q, 4, {&c.usage, &c.peak, &c.limit});
        c.unlimited = q.int64(7) != 0;
        optional_columns(q, 8,
                         {&c.anon, &c.file, &c.shmem, &c.file_mapped, &c.active_file,
                          &c.inactive_file, &c.failcnt, &c.oom_kill});
        c.part = part_of(q, 16);
        out.cgroup.push_back({q.int64(1), c});
    });
}

void TableReader::system(Cursor& cursor, RecordingData& out) {
    past(cursor, "system_samples", [&](sql::Statement& q) {
        SystemSample s;
        optional_columns(q, 2,
                         {&s.mem_total, &s.mem_available, &s.cached, &s.shmem, &s.dirty,
                          &s.devshm_used, &s.devshm_size, &s.active_file, &s.inactive_file,
                          &s.writeback, &s.kreclaimable});
        s.part = part_of(q, 13);
        out.system.push_back({q.int64(1), s});
    });
}

void TableReader::markers(Cursor& cursor, RecordingData& out) {
    past(cursor, "markers", [&](sql::Statement& q) {
        out.markers.push_back({q.int64(1), q.text(2), q.text(3), part_of(q, 4)});
    });
}

void TableReader::unavailable(Cursor& cursor, RecordingData& out) {
    past(cursor, "unavailable", [&](sql::Statement& q) {
        out.unavailable.push_back({q.int64(1), {q.int64(2), q.text(3), q.text(4), part_of(q, 5)}});
    });
}

void TableReader::tier_stats(Cursor& cursor, RecordingData& out) {
    past(cursor, "tier_stats", [&](sql::Statement& q) {
        out.tier_stats.push_back(
            {q.int64(1),
             {q.text(2), q.int64(3), q.real(4), static_cast<int>(q.int64(5)), part_of(q, 6)}});
    });
}

// Schema 7: the inputs of a merged recording, each with its own meta (read once: a merge writes
// them all in the one transaction that creates the file).
void TableReader::parts(Cursor& cursor, RecordingData& out) {
    past(cursor, "parts", [&](sql::Statement& q) {
        RecordingPart part;
        const std::int64_t id = q.int64(1);
        part.name = q.text(2);
        part.host = q.text(3);
        part.job = q.text(4);
        part.step = q.text(5);
        part.task = q.text(6);
        part.source = q.text(7);
        part.schema = q.int64(8);
        part.start_unix_ns = q.int64(9);
        part.offset_ms = q.int64(10);
        part.duration_ms = q.int64(11);
        part.last_sample_ms = q.int64(12);
        part.end_state = q.text(13);
        std::string problem;
        if (id < 1 || id > INT32_MAX)
            problem = "id " + std::to_string(id);
        else if (part.name.empty() || part.name.size() > 4096)
            problem = "a name of " + std::to_string(part.name.size()) + " bytes";
        else if (part.offset_ms < 0 || part.duration_ms < 0)
            problem = "offset " + std::to_string(part.offset_ms) + " ms, duration " +
                      std::to_string(part.duration_ms) + " ms";
        else if (part.end_state != "finished" && part.end_state != "interrupted" &&
                 part.end_state != "cut")
            problem = "end_state \"" + part.end_state.substr(0, 40) + "\"";
        if (!problem.empty())
            throw sql::Error("parts row " + std::to_string(q.int64(0)) + " holds " + problem +
                                 ", which no merge writes",
                             sql::error_mismatch);
        part.id = static_cast<int>(id);
        out.parts.push_back(std::move(part));
    });
    for (RecordingPart& part : out.parts)
        if (part.meta.empty())
            select("part_meta", "part = ?", part.id, "key",
                   [&](sql::Statement& q) { part.meta[q.text(2)] = q.text(3); });
}

void TableReader::meta(RecordingData& out) {
    select("meta", "? IS NOT NULL", 0, "key",
           [&](sql::Statement& q) { out.meta[q.text(1)] = q.text(2); });
}

void TableReader::loader(Cursor& cursor, RecordingData& out) {
    LoaderRun& run = out.loader;
    past(cursor, "loader_epochs", [&](sql::Statement& q) {
        run.epochs.push_back({static_cast<int>(q.int64(1)), static_cast<int>(q.int64(2)),
                              q.int64(3), q.int64(4), q.int64(5), q.int64(6), q.int64(7),
                              part_of(q, 8)});
    });
    past(cursor, "loader_workers", [&](sql::Statement& q) {
        run.workers.push_back({static_cast<int>(q.int64(1)), static_cast<int>(q.int64(2)),
                               static_cast<int>(q.int64(3)), q.int64(4), q.int64(5), part_of(q, 7),
                               q.optional_int64(6).value_or(0)});
    });
    past(cursor, "loader_progress", [&](sql::Statement& q) {
        LoaderProgress p{q.int64(1),
                         static_cast<int>(q.int64(2)),
                         static_cast<int>(q.int64(3)),
                         q.int64(4),
                         q.int64(5),
                         {},
                         part_of(q, 7)};
        // One figure per worker, up to 4096 workers, is far below this: a longer text is damage.
        constexpr std::size_t longest_workers = 128 * 1024;
        if (const std::string text = q.text(6); text.size() > longest_workers)
            throw sql::Error("loader_progress.workers of row " + std::to_string(q.int64(0)) +
                                 " holds " + std::to_string(text.size()) +
                                 " characters, more than one figure per worker of any loader",
                             sql::error_mismatch);
        // Written by us as an array of integers; anything else is left empty (unavailable). A
        // float such as 1e308 must not reach get<int64_t>, which would convert it with UB.
        const auto workers = nlohmann::json::parse(q.text(6), nullptr, false);
        if (workers.is_array() &&
            std::all_of(workers.begin(), workers.end(),
                        [](const nlohmann::json& v) { return v.is_number_integer(); }))
            for (const nlohmann::json& v : workers)
                p.worker_distinct_bytes.push_back(v.get<std::int64_t>());
        run.progress.push_back(std::move(p));
    });
}

namespace {

// Checks as ResidencyDecoder does (its messages): a row of a file residency_files lacks, a
// stored vector of another length than its file's buckets, a count outside 0 .. 2^31-1.
const ResidencyFile& mapped_file(const Cursor& cursor, std::int64_t id) {
    auto it = cursor.residency_files.find(id);
    if (it == cursor.residency_files.end())
        throw sql::Error("mapped_residency has rows of file " + std::to_string(id) +
                             ", which residency_files does not hold",
                         sql::error_mismatch);
    return it->second;
}

std::optional<std::int32_t> process_count(const Kib& stored) {
    if (!stored) return std::nullopt;
    if (*stored < 0 || *stored > INT32_MAX)
        throw sql::Error("mapped_residency: a process count of " + std::to_string(*stored),
                         sql::error_mismatch);
    return static_cast<std::int32_t>(*stored);
}

} // namespace

void TableReader::mapped_figures(Cursor& cursor, RecordingData& out) {
    past(cursor, "mapped_residency", out.mapped_residency, [&](sql::Statement& q) {
        MappedResidency m{.file_id = q.int64(2), .process_id = q.int64(3)};
        const ResidencyFile& file = mapped_file(cursor, m.file_id);
        m.mapped_pages = q.int64(4);
        m.present_pages = q.int64(5);
        const std::size_t stored = q.is_null(6) ? 0 : q.blob(6).size();
        if (!q.is_null(6) && stored != static_cast<std::size_t>(file.layout.count) * 4)
            throw sql::Error("mapped_residency.buckets of file " + std::to_string(file.id) +
                                 " holds " + std::to_string(stored) + " bytes where its " +
                                 std::to_string(file.layout.count) + " buckets take " +
                                 std::to_string(file.layout.count * 4),
                             sql::error_mismatch);
        m.pss_kb = q.optional_int64(7);
        m.outside_sharers = process_count(q.optional_int64(8));
        m.outside_unreadable = process_count(q.optional_int64(9));
        return Timed<MappedResidency>{q.int64(1), std::move(m)};
    });
}

} // namespace loaderlens
