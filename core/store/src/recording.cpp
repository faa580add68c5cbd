// SPDX-License-Identifier: MIT
#include "loaderlens/recording.hpp"

#include "loader_meta.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/sqlite.hpp"
#include "recording_open.hpp"
#include "recording_read.hpp"
#include "recording_schema.hpp"
#include "residency_decoder.hpp"
#include "table_reader.hpp"

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

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Whether the process of /proc/PID started no later than the recording (+1 s): a PID reused
// since then belongs to a process started after it.
bool started_before(const std::string& proc, std::optional<std::int64_t> start_unix_ns) {
    const std::string stat = file_text(proc + "/stat");
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
        schema_ = version.int64(0);
        const std::int64_t schema = schema_;
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
        // The header's page count against the file's size is free; quick_check reads every page
        // (O(size)), so only a small file gets it, and damage found later in a large one is a
        // RecordingError when it is read.
        // With a -wal beside it, pages missing from the main file may be in the WAL (a checkpoint
        // stopped by a full disk writes page 1 and not the rest): the header is not the last word.
        const bool wal_has_frames = has_wal && file_size(path + "-wal") > 0;
        if (const std::string cut = wal_has_frames ? std::string() : truncation_problem(path);
            !cut.empty())
            throw RecordingError(
                path + ": recording is damaged or truncated (" + cut + ")" +
                (missing_wal_.empty() ? "" : "; " + missing_wal_ + " is missing beside it"));
        if (const std::string problems = file_size(path) <= quick_check_largest_file
                                             ? quick_check_problems(*db_)
                                             : std::string();
            !problems.empty())
            throw RecordingError(
                path + ": recording is damaged or truncated (" + problems + ")" +
                (missing_wal_.empty() ? "" : "; " + missing_wal_ + " is missing beside it"));
        recording_schema::check(*db_, path, schema);
        tables_ = std::make_unique<TableReader>(*db_, schema_);
        residency_ = std::make_unique<ResidencyDecoder>(*db_, *tables_, schema_);
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
    if (file_text(proc + "/cmdline").find("loaderlens") == std::string::npos) return false;
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

RecordingData Recording::read_new(Cursor& cursor) const {
    return read(cursor, {});
}

RecordingData Recording::read(Cursor& cursor, const ReadScope& scope) const {
    return read_recording(path_, [&] {
        RecordingData out;
        // One read transaction: every table as of one commit of the writer.
        db_->exec("BEGIN");
        try {
            auto version = db_->prepare("PRAGMA data_version");
            version.step();
            cursor.data_version = version.int64(0);
            tables_->meta(out);
            tables_->parts(cursor, out);
            tables_->processes(cursor, out);
            tables_->objects(cursor, out);
            tables_->fast(cursor, out);
            tables_->rollup(cursor, out);
            tables_->maps(cursor, out);
            tables_->cgroup(cursor, out);
            tables_->system(cursor, out);
            tables_->markers(cursor, out);
            tables_->unavailable(cursor, out);
            tables_->tier_stats(cursor, out);
            if (scope.mapped_buckets) {
                residency_->read(cursor, out);
            } else {
                // The decoder reads files and the page cache; its mapped rows (each with a copy of
                // the vector in force) are skipped, and read here with their figures alone.
                std::int64_t& mapped = cursor.read_up_to["mapped_residency"];
                const std::int64_t from = mapped;
                mapped = tables_->last_rowid("mapped_residency");
                residency_->read(cursor, out);
                mapped = from;
                if (schema_ >= 3) tables_->mapped_figures(cursor, out);
            }
            tables_->loader(cursor, out);
            db_->exec("COMMIT");
        } catch (...) {
            db_->exec("ROLLBACK");
            throw;
        }
        take_loader_meta(path_, out);
        // A merged recording's parts keep their loader's config in their meta: checked alike.
        for (const RecordingPart& part : out.parts) {
            RecordingData one;
            one.meta = part.meta;
            take_loader_meta(path_ + ": part " + part.name, one);
        }
        return out;
    });
}

bool Recording::has_new(const Cursor& cursor) const {
    if (!cursor.data_version) return true;
    return read_recording(path_, [&] {
        auto version = db_->prepare("PRAGMA data_version");
        version.step();
        return version.int64(0) != *cursor.data_version;
    });
}

Cursor Recording::cursor_at_end() const {
    return read_recording(path_, [&] {
        Cursor cursor;
        db_->exec("BEGIN");
        for (const char* table :
             {"objects", "fast_samples", "rollup_samples", "map_samples", "cgroup_samples",
              "system_samples", "markers", "unavailable", "tier_stats", "cache_residency",
              "mapped_residency", "loader_epochs", "loader_workers", "loader_progress"})
            cursor.read_up_to[table] = tables_->last_rowid(table);
        db_->exec("COMMIT");
        // Processes and residency files stay unread: the view needs them all to name what follows.
        return cursor;
    });
}

RecordingData Recording::read_all() const {
    Cursor cursor;
    return read_new(cursor);
}

RecordingData Recording::read_all(const ReadScope& scope) const {
    Cursor cursor;
    return read(cursor, scope);
}

std::vector<ProcessInfo> Recording::processes() const {
    return read_all().processes;
}
std::vector<ObjectInfo> Recording::objects() const {
    return read_all().objects;
}
std::vector<Timed<FastSample>> Recording::fast() const {
    return read_all().fast;
}
std::vector<Timed<RollupSample>> Recording::rollup() const {
    return read_all().rollup;
}
std::vector<MapRow> Recording::maps() const {
    return read_all().maps;
}
std::vector<Timed<CgroupSample>> Recording::cgroup() const {
    return read_all().cgroup;
}
std::vector<Timed<SystemSample>> Recording::system() const {
    return read_all().system;
}
std::vector<Marker> Recording::markers() const {
    return read_all().markers;
}
std::vector<Timed<Unavailability>> Recording::unavailable() const {
    return read_all().unavailable;
}
std::vector<Timed<TierStat>> Recording::tier_stats() const {
    return read_all().tier_stats;
}
std::vector<ResidencyFile> Recording::residency_files() const {
    return read_all().residency_files;
}
std::vector<Timed<CacheResidency>> Recording::cache_residency() const {
    return read_all().cache_residency;
}
std::vector<Timed<MappedResidency>> Recording::mapped_residency() const {
    return read_all().mapped_residency;
}
LoaderRun Recording::loader_run() const {
    return read_all().loader;
}
std::int64_t Recording::last_sample_ms() const {
    return read_recording(path_, [&] {
        auto q = db_->prepare(
            "SELECT max(t) FROM (SELECT (SELECT t_ms FROM fast_samples ORDER BY rowid DESC LIMIT "
            "1) AS t UNION ALL SELECT (SELECT t_ms FROM rollup_samples ORDER BY rowid DESC LIMIT "
            "1) "
            "UNION ALL SELECT (SELECT t_ms FROM system_samples ORDER BY rowid DESC LIMIT 1))");
        q.step();
        return q.optional_int64(0).value_or(-1);
    });
}

} // namespace loaderlens
