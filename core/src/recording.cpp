// SPDX-License-Identifier: MIT
#include "loaderlens/recording.hpp"

#include "loaderlens/recorder.hpp"
#include "loaderlens/sqlite.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <sqlite3.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

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

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// Bytes 18 and 19 of the SQLite header (file format write and read versions) are 2 in WAL mode.
bool wal_mode_header(const std::string& path) {
    char header[20] = {};
    std::ifstream in(path, std::ios::binary);
    return in.read(header, sizeof header) && std::memcmp(header, "SQLite format 3", 16) == 0 &&
           header[18] == 2 && header[19] == 2;
}

std::string file_uri(const std::string& path) {
    std::string absolute = std::filesystem::absolute(path).string();
    absolute.erase(0, absolute.find_first_not_of('/') - 1); // "//x" would name a host
    std::string uri = "file:";
    for (const unsigned char c : absolute) {
        if (std::isalnum(c) || std::strchr("/-._~", c)) {
            uri += static_cast<char>(c);
        } else {
            char escaped[4];
            std::snprintf(escaped, sizeof escaped, "%%%02X", c);
            uri += escaped;
        }
    }
    return uri;
}

// A WAL recording without its -shm (or -wal) beside it has no live writer: a writer keeps both.
// SQLite would create them, which it cannot where it may not write (another user's recording, a
// read-only directory or mount), and an empty -wal it made would hide that the real one is lost.
// Such a file is read without them: no locking (unix-none) and exclusive mode, in which SQLite
// reads the WAL into an index in memory.
std::unique_ptr<sql::Database> open_reader(const std::string& path, bool without_shm) {
    if (!without_shm) return std::make_unique<sql::Database>(path, sql::open_read_only);
    auto db = std::make_unique<sql::Database>(file_uri(path) + "?mode=ro&vfs=unix-none",
                                              sql::open_read_only | sql::open_uri);
    db->exec("PRAGMA locking_mode=EXCLUSIVE");
    return db;
}

std::string lost_wal_message(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    return path + ": the recording's data is in " + path + "-wal, which is missing: copy " + name +
           "-wal (and " + name + "-shm) along with " + name;
}

// A meta value as it may be shown in a one-line message.
std::string quoted(const std::string& value) {
    std::string out = "\"";
    for (const char c : value.substr(0, 60))
        out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    return out + (value.size() > 60 ? "...\"" : "\"");
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
    const bool wal = wal_mode_header(path), has_wal = exists(path + "-wal");
    if (wal && !has_wal) missing_wal_ = path + "-wal";
    try {
        db_ = open_reader(path, wal && (!has_wal || !exists(path + "-shm")));
        auto version = db_->prepare("PRAGMA user_version");
        version.step();
        const std::int64_t schema = version.int64(0);
        if (!db_->has_table("meta") || meta("format") != recording_format) {
            if (!missing_wal_.empty()) throw RecordingError(lost_wal_message(path));
            throw RecordingError(path +
                                 ": not a loaderlens recording (SQLite, but no recording meta)");
        }
        if (schema > recording_schema_version)
            throw RecordingError(path + ": recording schema " + std::to_string(schema) +
                                 " is newer than this loaderlens understands (" +
                                 std::to_string(recording_schema_version) +
                                 "): upgrade loaderlens");
        // A truncated copy often opens and fails only when a missing page is read: look first.
        auto check = db_->prepare("PRAGMA quick_check");
        check.step();
        if (check.text(0) != "ok")
            throw RecordingError(
                path + ": recording is damaged or truncated (" + check.text(0) + ")" +
                (missing_wal_.empty() ? "" : "; " + missing_wal_ + " is missing beside it"));
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

std::optional<std::int64_t> Recording::meta_number(const std::string& key) const {
    auto q = db_->prepare("SELECT value FROM meta WHERE key=?");
    q.bind(1, key);
    if (!q.step()) return std::nullopt;
    const std::string value = q.text(0);
    std::int64_t number = 0;
    const char* end = value.data() + value.size();
    if (auto [stop, error] = std::from_chars(value.data(), end, number);
        error == std::errc{} && stop == end && !value.empty())
        return number;
    throw RecordingError(path_ + ": meta " + key + " holds " + quoted(value) +
                         " where a number belongs (damaged recording?)");
}

bool Recording::finished() const {
    return meta("state") != "recording";
}

RecordingEnd Recording::end() const {
    RecordingEnd e;
    e.last_sample_ms = last_sample_ms();
    e.writer_pid = meta_number("writer_pid");
    if (std::string signal = meta("signal_received"); !signal.empty()) e.signal = signal;
    e.signal_ms = meta_number("signal_received_ms");
    if (finished())
        e.state = RecordingEnd::State::finished;
    else if (e.writer_pid && writer_alive(*e.writer_pid))
        e.state = RecordingEnd::State::being_written;
    else
        e.state = RecordingEnd::State::cut;
    return e;
}

// A live loaderlens process on this host, and (where its fds can be read: our own processes, or
// as root) one that has this very file open, not a copy of it.
bool Recording::writer_alive(std::int64_t pid) const {
    if (pid <= 0 || pid == ::getpid() || !this_host(meta("host"))) return false;
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
