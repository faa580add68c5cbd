// SPDX-License-Identifier: MIT
#include "loaderlens/recording.hpp"

#include "loaderlens/one_line.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/sqlite.hpp"
#include "recording_open.hpp"
#include "recording_read.hpp"
#include "recording_schema.hpp"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <limits>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace loaderlens {

using namespace recording_open;

RecordingError::RecordingError(const std::string& what) : std::runtime_error(one_line(what)) {}

std::string describe_sql_error(const sql::Error& e) {
    switch (e.code & 0xff) {
    case SQLITE_NOTADB:
        return "not a loaderlens recording (not an SQLite database)";
    case SQLITE_CORRUPT:
        return "recording is damaged or truncated (" + std::string(e.what()) + ")";
    case SQLITE_MISMATCH:
        return "recording is damaged: " + std::string(e.what());
    case SQLITE_CANTOPEN:
        return "cannot open (" + std::string(e.what()) + ")";
    case SQLITE_NOMEM:
        return "out of memory while reading it (" + std::string(e.what()) + ")";
    default:
        return "cannot read it (" + std::string(e.what()) + ")";
    }
}

namespace {

// A meta value as it may be shown in a one-line message.
std::string quoted(const std::string& value) {
    return "\"" + one_line(std::string_view(value).substr(0, 60)) +
           (value.size() > 60 ? "...\"" : "\"");
}

bool this_host(const std::string& host) {
    if (host.empty()) return false;
    if (const char* slurm = std::getenv("SLURMD_NODENAME"); slurm && host == slurm) return true;
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 && host == name;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Whether the process of /proc/PID started no later than the recording (+1 s): a PID reused
// since then belongs to a process started after it.
bool started_before(const std::string& proc, std::optional<std::int64_t> start_unix_ns) {
    const std::string stat = read_all(proc + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) return false;
    std::istringstream fields(stat.substr(paren + 1));
    std::string field;
    for (int i = 3; i <= 22 && fields >> field; ++i) { // field 22: start time, ticks since boot
    }
    if (!start_unix_ns) return true;
    timespec boot{}, real{};
    clock_gettime(CLOCK_BOOTTIME, &boot);
    clock_gettime(CLOCK_REALTIME, &real);
    const double started = std::strtod(field.c_str(), nullptr) / sysconf(_SC_CLK_TCK);
    const double recording_started = static_cast<double>(boot.tv_sec) + boot.tv_nsec / 1e9 -
                                     (static_cast<double>(real.tv_sec) + real.tv_nsec / 1e9 -
                                      static_cast<double>(*start_unix_ns) / 1e9);
    return started <= recording_started + 1.0;
}

} // namespace

Recording::Recording(const std::string& path) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw RecordingError(path + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw RecordingError(path + ": is a directory, not a recording");
    if (st.st_size == 0) throw RecordingError(path + ": empty file, not a recording");
    // SQLite says only "unable to open database file" of a file or a -wal it may not read.
    if (::access(path.c_str(), R_OK) != 0) throw RecordingError(path + ": " + std::strerror(errno));
    const bool wal = wal_mode_header(path), has_wal = exists(path + "-wal");
    if (has_wal && ::access((path + "-wal").c_str(), R_OK) != 0)
        throw RecordingError(path + "-wal: " + std::strerror(errno) +
                             " (the recording's newest data is in it)");
    if (wal && !has_wal) missing_wal_ = path + "-wal";
    try {
        db_ = open_reader(path, open_mode(wal, has_wal, exists(path + "-shm")));
        auto version = db_->prepare("PRAGMA user_version");
        version.step();
        const std::int64_t schema = version.int64(0);
        if (!db_->has_table("meta") || meta("format") != recording_format) {
            if (!missing_wal_.empty()) throw RecordingError(lost_wal_message(path, "missing"));
            if (wal && file_size(path + "-wal") == 0)
                throw RecordingError(lost_wal_message(path, "empty"));
            // No table at all in a WAL-mode file: its schema and data were all in the -wal, and
            // SQLite found no complete transaction there.
            if (wal && !db_->has_any_table())
                throw RecordingError(path + ": the recording's data is in " + path +
                                     "-wal, which is damaged or truncated: SQLite finds no "
                                     "complete transaction in it");
            throw RecordingError(path +
                                 ": not a loaderlens recording (SQLite, but no recording meta)");
        }
        if (schema > recording_schema_version)
            throw RecordingError(path + ": recording schema " + std::to_string(schema) +
                                 " is newer than this loaderlens understands (" +
                                 std::to_string(recording_schema_version) +
                                 "): upgrade loaderlens");
        // A truncated copy often opens and fails only when a missing page is read: look first.
        if (const std::string problems = quick_check_problems(*db_); !problems.empty())
            throw RecordingError(
                path + ": recording is damaged or truncated (" + problems + ")" +
                (missing_wal_.empty() ? "" : "; " + missing_wal_ + " is missing beside it"));
        recording_schema::check(*db_, path, schema);
        recording_schema::check_values(*db_, path);
        finished(); // a state that is none of ours is damage, said now rather than mid-report
    } catch (const sql::Error& e) {
        throw RecordingError(path + ": " + describe_sql_error(e));
    }
}

Recording::~Recording() = default;
Recording::Recording(Recording&&) noexcept = default;

std::optional<std::string> Recording::meta_value(const std::string& key) const {
    return read_recording(path_, [&]() -> std::optional<std::string> {
        auto q = db_->prepare("SELECT value FROM meta WHERE key=?");
        q.bind(1, key);
        if (!q.step()) return std::nullopt;
        return q.text(0);
    });
}

std::string Recording::meta(const std::string& key, const std::string& fallback) const {
    return meta_value(key).value_or(fallback);
}

std::map<std::string, std::string> Recording::all_meta() const {
    return read_recording(path_, [&] {
        std::map<std::string, std::string> out;
        auto q = db_->prepare("SELECT key, value FROM meta");
        while (q.step())
            out[q.text(0)] = q.text(1);
        return out;
    });
}

std::optional<std::int64_t> Recording::meta_number(const std::string& key) const {
    const std::optional<std::string> stored = meta_value(key);
    if (!stored) return std::nullopt;
    const std::string& value = *stored;
    std::int64_t number = 0;
    const char* end = value.data() + value.size();
    if (auto [stop, error] = std::from_chars(value.data(), end, number);
        error == std::errc{} && stop == end && !value.empty())
        return number;
    throw RecordingError(path_ + ": meta " + key + " holds " + quoted(value) +
                         " where a number belongs (damaged recording?)");
}

bool Recording::finished() const {
    const std::string state = meta("state");
    if (state == "recording") return false;
    if (state == "finished" || state == "interrupted") return true;
    throw RecordingError(path_ + ": meta state holds " + quoted(state) +
                         " where recording, finished or interrupted belongs (damaged recording?)");
}

RecordingEnd Recording::end() const {
    RecordingEnd e;
    e.last_sample_ms = last_sample_ms();
    e.writer_pid = meta_number("writer_pid");
    if (std::string signal = meta("signal_received"); !signal.empty()) e.signal = signal;
    e.signal_ms = meta_number("signal_received_ms");
    e.end_ms = meta_number("end_ms");
    // A recording that says finished but holds no end_ms did not get its end written in full.
    if (finished() && e.end_ms)
        e.state = RecordingEnd::State::finished;
    else if (!finished() && e.writer_pid && writer_alive(*e.writer_pid))
        e.state = RecordingEnd::State::being_written;
    else
        e.state = RecordingEnd::State::cut;
    if (e.state == RecordingEnd::State::cut) {
        // A write that failed for lack of space stops the recorder; the space is still gone.
        struct statvfs fs {};
        std::error_code error;
        const auto dir = std::filesystem::absolute(path_, error).parent_path();
        e.file_system_full = !error && ::statvfs(dir.c_str(), &fs) == 0 &&
                             static_cast<double>(fs.f_bavail) * fs.f_frsize < 256.0 * 1024;
    }
    return e;
}

// A live loaderlens process on this host, and (where its fds can be read: our own processes, or
// as root) one that has this very file open, not a copy of it.
bool Recording::writer_alive(std::int64_t pid) const {
    if (pid <= 0 || pid > std::numeric_limits<pid_t>::max() || pid == ::getpid() ||
        !this_host(meta("host")))
        return false;
    const std::string proc = "/proc/" + std::to_string(pid);
    if (read_all(proc + "/cmdline").find("loaderlens") == std::string::npos) return false;
    struct stat file {};
    DIR* fds = ::opendir((proc + "/fd").c_str());
    if (!fds || ::stat(path_.c_str(), &file) != 0) {
        if (fds) ::closedir(fds);
        return started_before(proc, meta_number("start_unix_ns"));
    }
    bool open = false;
    while (const dirent* entry = ::readdir(fds)) {
        struct stat st {};
        if (::stat((proc + "/fd/" + entry->d_name).c_str(), &st) == 0 && st.st_dev == file.st_dev &&
            st.st_ino == file.st_ino && S_ISREG(st.st_mode))
            open = true;
    }
    ::closedir(fds);
    return open;
}

std::vector<ProcessInfo> Recording::processes() const {
    return read_recording(path_, [&] {
        std::vector<ProcessInfo> out;
        auto q = db_->prepare("SELECT id, pid, start_ticks, ppid, parent_id, comm, cmdline, role, "
                              "slot, generation, birth_ms, exit_ms, exit_status FROM processes "
                              "ORDER BY id");
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
    });
}

std::vector<ObjectInfo> Recording::objects() const {
    return read_recording(path_, [&] {
        std::vector<ObjectInfo> out;
        auto q = db_->prepare("SELECT id, kind, path, inode, size_bytes FROM objects ORDER BY id");
        while (q.step()) {
            const std::int64_t id = q.int64(0);
            out.push_back({id, mapping_kind_from_string(q.text(1)).value_or(MappingKind::other),
                           checked_path(q.text(2), "objects", id),
                           static_cast<std::uint64_t>(q.int64(3)), q.optional_int64(4)});
        }
        return out;
    });
}

// The sample tables are read by column name, never by position (SELECT *): a table rebuilt
// with a column missing or moved must not be read shifted (recording_schema.hpp refuses it).
std::vector<Timed<FastSample>> Recording::fast(std::int64_t since_ms) const {
    return read_recording(path_, [&] {
        std::vector<Timed<FastSample>> out;
        auto q = db_->prepare("SELECT t_ms, process_id, rss_kb, anon_kb, file_kb, shmem_kb, "
                              "swap_kb FROM fast_samples WHERE t_ms > ? ORDER BY t_ms, process_id");
        q.bind(1, since_ms);
        while (q.step())
            out.push_back({q.int64(0), FastSample{q.int64(1), q.optional_int64(2),
                                                  q.optional_int64(3), q.optional_int64(4),
                                                  q.optional_int64(5), q.optional_int64(6)}});
        return out;
    });
}

std::vector<Timed<RollupSample>> Recording::rollup(std::int64_t since_ms) const {
    return read_recording(path_, [&] {
        std::vector<Timed<RollupSample>> out;
        auto q = db_->prepare(
            "SELECT t_ms, process_id, rss_kb, pss_kb, pss_anon_kb, pss_file_kb, pss_shmem_kb, "
            "shared_clean_kb, shared_dirty_kb, private_clean_kb, private_dirty_kb, swap_kb, "
            "swap_pss_kb, locked_kb FROM rollup_samples WHERE t_ms > ? ORDER BY t_ms, process_id");
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
    });
}

std::vector<MapRow> Recording::maps(std::int64_t since_ms) const {
    return read_recording(path_, [&] {
        std::vector<MapRow> out;
        auto q = db_->prepare("SELECT t_ms, process_id, object_id, size_kb, rss_kb, pss_kb, "
                              "shared_clean_kb, shared_dirty_kb, private_clean_kb, "
                              "private_dirty_kb, swap_kb FROM map_samples WHERE t_ms > ? "
                              "ORDER BY t_ms, process_id");
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
    });
}

std::vector<Timed<CgroupSample>> Recording::cgroup(std::int64_t since_ms) const {
    return read_recording(path_, [&] {
        std::vector<Timed<CgroupSample>> out;
        auto q = db_->prepare(
            "SELECT t_ms, version, path, usage_kb, peak_kb, limit_kb, unlimited, anon_kb, file_kb, "
            "shmem_kb, file_mapped_kb, active_file_kb, inactive_file_kb, failcnt, oom_kill FROM "
            "cgroup_samples WHERE t_ms > ? ORDER BY t_ms");
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
    });
}

std::vector<Timed<SystemSample>> Recording::system(std::int64_t since_ms) const {
    return read_recording(path_, [&] {
        std::vector<Timed<SystemSample>> out;
        auto q = db_->prepare("SELECT t_ms, mem_total_kb, mem_available_kb, cached_kb, shmem_kb, "
                              "dirty_kb, devshm_used_kb, devshm_size_kb FROM system_samples "
                              "WHERE t_ms > ? ORDER BY t_ms");
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
    });
}

std::vector<Marker> Recording::markers() const {
    return read_recording(path_, [&] {
        std::vector<Marker> out;
        auto q = db_->prepare("SELECT t_ms, source, text FROM markers ORDER BY t_ms");
        while (q.step())
            out.push_back({q.int64(0), q.text(1), q.text(2)});
        return out;
    });
}

std::vector<Timed<Unavailability>> Recording::unavailable() const {
    return read_recording(path_, [&] {
        std::vector<Timed<Unavailability>> out;
        auto q =
            db_->prepare("SELECT t_ms, process_id, tier, reason FROM unavailable ORDER BY t_ms");
        while (q.step())
            out.push_back({q.int64(0), {q.int64(1), q.text(2), q.text(3)}});
        return out;
    });
}

std::vector<Timed<TierStat>> Recording::tier_stats() const {
    return read_recording(path_, [&] {
        std::vector<Timed<TierStat>> out;
        auto q = db_->prepare("SELECT t_ms, tier, interval_ms, cpu_us_per_run, processes FROM "
                              "tier_stats ORDER BY t_ms");
        while (q.step())
            out.push_back(
                {q.int64(0), {q.text(1), q.int64(2), q.real(3), static_cast<int>(q.int64(4))}});
        return out;
    });
}

std::int64_t Recording::last_sample_ms() const {
    return read_recording(path_, [&] {
        auto q = db_->prepare("SELECT max(t) FROM (SELECT max(t_ms) AS t FROM fast_samples UNION "
                              "ALL SELECT max(t_ms) FROM rollup_samples UNION ALL SELECT "
                              "max(t_ms) FROM system_samples)");
        q.step();
        return q.optional_int64(0).value_or(-1);
    });
}

} // namespace loaderlens
