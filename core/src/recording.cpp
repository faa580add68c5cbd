#include "loaderlens/recording.hpp"

#include "loaderlens/recorder.hpp"
#include "loaderlens/sqlite.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace loaderlens {

namespace {

std::string describe(const sql::Error& e) {
    switch (e.code & 0xff) {
    case SQLITE_NOTADB:
        return "not a loaderlens recording (not an SQLite database)";
    case SQLITE_CORRUPT:
        return "recording is damaged or truncated (" + std::string(e.what()) + ")";
    case SQLITE_CANTOPEN:
        return "cannot open (" + std::string(e.what()) + ")";
    default:
        return e.what();
    }
}

} // namespace

Recording::Recording(const std::string& path) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw RecordingError(path + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw RecordingError(path + ": is a directory, not a recording");
    if (st.st_size == 0) throw RecordingError(path + ": empty file, not a recording");
    try {
        db_ = std::make_unique<sql::Database>(path, SQLITE_OPEN_READONLY);
        auto version = db_->prepare("PRAGMA user_version");
        version.step();
        const std::int64_t schema = version.int64(0);
        if (!db_->has_table("meta") || meta("format") != recording_format)
            throw RecordingError(path +
                                 ": not a loaderlens recording (SQLite, but no recording meta)");
        if (schema > recording_schema_version)
            throw RecordingError(path + ": recording schema " + std::to_string(schema) +
                                 " is newer than this loaderlens understands (" +
                                 std::to_string(recording_schema_version) +
                                 "): upgrade loaderlens");
        // A truncated copy often opens and fails only when a missing page is read: look first.
        auto check = db_->prepare("PRAGMA quick_check");
        check.step();
        if (check.text(0) != "ok")
            throw RecordingError(path + ": recording is damaged or truncated (" + check.text(0) +
                                 ")");
    } catch (const sql::Error& e) {
        throw RecordingError(path + ": " + describe(e));
    }
}

Recording::~Recording() = default;
Recording::Recording(Recording&&) noexcept = default;

std::string Recording::meta(const std::string& key, const std::string& fallback) const {
    auto q = db_->prepare("SELECT value FROM meta WHERE key=?");
    q.bind(1, key);
    return q.step() ? q.text(0) : fallback;
}

std::map<std::string, std::string> Recording::all_meta() const {
    std::map<std::string, std::string> out;
    auto q = db_->prepare("SELECT key, value FROM meta");
    while (q.step())
        out[q.text(0)] = q.text(1);
    return out;
}

bool Recording::finished() const {
    return meta("state") != "recording";
}

std::vector<ProcessInfo> Recording::processes() const {
    std::vector<ProcessInfo> out;
    auto q =
        db_->prepare("SELECT id, pid, start_ticks, ppid, parent_id, comm, cmdline, role, slot, "
                     "generation, birth_ms, exit_ms, exit_status FROM processes ORDER BY id");
    while (q.step()) {
        ProcessInfo p;
        p.id = q.int64(0);
        p.key = {static_cast<pid_t>(q.int64(1)), static_cast<std::uint64_t>(q.int64(2))};
        p.ppid = static_cast<pid_t>(q.int64(3));
        p.parent_id = q.int64(4);
        p.comm = q.text(5);
        p.cmdline = q.text(6);
        p.role = role_from_string(q.text(7)).value_or(Role::helper);
        p.slot = static_cast<int>(q.optional_int64(8).value_or(-1));
        p.generation = static_cast<int>(q.optional_int64(9).value_or(-1));
        p.birth_ms = q.int64(10);
        p.exit_ms = q.optional_int64(11);
        if (auto status = q.optional_int64(12)) p.exit_status = static_cast<int>(*status);
        out.push_back(std::move(p));
    }
    return out;
}

std::vector<ObjectInfo> Recording::objects() const {
    std::vector<ObjectInfo> out;
    auto q = db_->prepare("SELECT id, kind, path, inode, size_bytes FROM objects ORDER BY id");
    while (q.step())
        out.push_back({q.int64(0), mapping_kind_from_string(q.text(1)).value_or(MappingKind::other),
                       q.text(2), static_cast<std::uint64_t>(q.int64(3)), q.optional_int64(4)});
    return out;
}

std::vector<Timed<FastSample>> Recording::fast(std::int64_t since_ms) const {
    std::vector<Timed<FastSample>> out;
    auto q = db_->prepare("SELECT t_ms, process_id, rss_kb, anon_kb, file_kb, shmem_kb, swap_kb "
                          "FROM fast_samples WHERE t_ms > ? ORDER BY t_ms, process_id");
    q.bind(1, since_ms);
    while (q.step())
        out.push_back({q.int64(0),
                       FastSample{q.int64(1), q.optional_int64(2), q.optional_int64(3),
                                  q.optional_int64(4), q.optional_int64(5), q.optional_int64(6)}});
    return out;
}

std::vector<Timed<RollupSample>> Recording::rollup(std::int64_t since_ms) const {
    std::vector<Timed<RollupSample>> out;
    auto q = db_->prepare("SELECT * FROM rollup_samples WHERE t_ms > ? ORDER BY t_ms, process_id");
    q.bind(1, since_ms);
    while (q.step()) {
        RollupSample r;
        r.process_id = q.int64(1);
        Kib* fields[] = {&r.rss,           &r.pss,          &r.pss_anon,     &r.pss_file,
                         &r.pss_shmem,     &r.shared_clean, &r.shared_dirty, &r.private_clean,
                         &r.private_dirty, &r.swap,         &r.swap_pss,     &r.locked};
        for (int i = 0; i < 12; ++i)
            *fields[i] = q.optional_int64(2 + i);
        out.push_back({q.int64(0), r});
    }
    return out;
}

std::vector<MapRow> Recording::maps(std::int64_t since_ms) const {
    std::vector<MapRow> out;
    auto q = db_->prepare("SELECT * FROM map_samples WHERE t_ms > ? ORDER BY t_ms, process_id");
    q.bind(1, since_ms);
    while (q.step()) {
        MapRow row{q.int64(0), q.int64(1), q.int64(2), {}};
        auto& f = row.figures;
        std::int64_t* fields[] = {&f.size_kb,          &f.rss_kb,          &f.pss_kb,
                                  &f.shared_clean_kb,  &f.shared_dirty_kb, &f.private_clean_kb,
                                  &f.private_dirty_kb, &f.swap_kb};
        for (int i = 0; i < 8; ++i)
            *fields[i] = q.int64(3 + i);
        out.push_back(row);
    }
    return out;
}

std::vector<Timed<CgroupSample>> Recording::cgroup(std::int64_t since_ms) const {
    std::vector<Timed<CgroupSample>> out;
    auto q = db_->prepare("SELECT * FROM cgroup_samples WHERE t_ms > ? ORDER BY t_ms");
    q.bind(1, since_ms);
    while (q.step()) {
        CgroupSample c;
        c.version = q.text(1);
        c.path = q.text(2);
        Kib* fields[] = {&c.usage, &c.peak, &c.limit};
        for (int i = 0; i < 3; ++i)
            *fields[i] = q.optional_int64(3 + i);
        c.unlimited = q.int64(6) != 0;
        Kib* stat[] = {&c.anon,        &c.file,        &c.shmem,
                       &c.file_mapped, &c.active_file, &c.inactive_file};
        for (int i = 0; i < 6; ++i)
            *stat[i] = q.optional_int64(7 + i);
        c.failcnt = q.optional_int64(13);
        c.oom_kill = q.optional_int64(14);
        out.push_back({q.int64(0), c});
    }
    return out;
}

std::vector<Timed<SystemSample>> Recording::system(std::int64_t since_ms) const {
    std::vector<Timed<SystemSample>> out;
    auto q = db_->prepare("SELECT * FROM system_samples WHERE t_ms > ? ORDER BY t_ms");
    q.bind(1, since_ms);
    while (q.step()) {
        SystemSample s;
        Kib* fields[] = {&s.mem_total, &s.mem_available, &s.cached,     &s.shmem,
                         &s.dirty,     &s.devshm_used,   &s.devshm_size};
        for (int i = 0; i < 7; ++i)
            *fields[i] = q.optional_int64(1 + i);
        out.push_back({q.int64(0), s});
    }
    return out;
}

std::vector<Marker> Recording::markers() const {
    std::vector<Marker> out;
    auto q = db_->prepare("SELECT t_ms, source, text FROM markers ORDER BY t_ms");
    while (q.step())
        out.push_back({q.int64(0), q.text(1), q.text(2)});
    return out;
}

std::vector<Timed<Unavailability>> Recording::unavailable() const {
    std::vector<Timed<Unavailability>> out;
    auto q = db_->prepare("SELECT t_ms, process_id, tier, reason FROM unavailable ORDER BY t_ms");
    while (q.step())
        out.push_back({q.int64(0), {q.int64(1), q.text(2), q.text(3)}});
    return out;
}

std::vector<Timed<TierStat>> Recording::tier_stats() const {
    std::vector<Timed<TierStat>> out;
    auto q =
        db_->prepare("SELECT t_ms, tier, interval_ms, cpu_us_per_run, processes FROM tier_stats "
                     "ORDER BY t_ms");
    while (q.step())
        out.push_back(
            {q.int64(0), {q.text(1), q.int64(2), q.real(3), static_cast<int>(q.int64(4))}});
    return out;
}

std::int64_t Recording::last_sample_ms() const {
    auto q = db_->prepare("SELECT max(t) FROM (SELECT max(t_ms) AS t FROM fast_samples UNION ALL "
                          "SELECT max(t_ms) FROM rollup_samples UNION ALL SELECT max(t_ms) FROM "
                          "system_samples)");
    q.step();
    return q.optional_int64(0).value_or(-1);
}

} // namespace loaderlens
