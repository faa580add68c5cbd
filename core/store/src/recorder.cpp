// SPDX-License-Identifier: MIT
#include "loaderlens/recorder.hpp"

#include "loader_writer.hpp"
#include "recording_tables.hpp"
#include "residency_writer.hpp"
#include "row_writer.hpp"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace loaderlens {

static_assert(recording_schema_version == recording_tables::schema_version);

std::string recording_host_name() {
    if (const char* slurm = std::getenv("SLURMD_NODENAME"); slurm && *slurm) return slurm;
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    return host;
}

std::string recording_schema_sql() {
    return recording_tables::create_sql();
}

namespace {

constexpr std::array<const char*, 3> sqlite_companions{"-wal", "-shm", "-journal"};

bool exists_as_anything(const std::string& name) {
    struct stat st {};
    return ::lstat(name.c_str(), &st) == 0;
}

// What `name` (under `directory`) names now; nullopt when nothing. `unknown`: it could not be
// told (permission denied, an I/O error), which is not taken for the file being gone.
std::optional<std::pair<unsigned long long, unsigned long long>>
named_at(int directory, const std::string& name, bool* unknown = nullptr) {
    struct stat st {};
    if (::fstatat(directory, name.c_str(), &st, 0) == 0)
        return std::make_pair(static_cast<unsigned long long>(st.st_dev),
                              static_cast<unsigned long long>(st.st_ino));
    if (unknown) *unknown = errno != ENOENT && errno != ENOTDIR;
    return std::nullopt;
}

} // namespace

Recorder::Recorder(const std::string& path, bool overwrite) : path_(path) {
    if (overwrite) {
        // Only what a recorder could have written: a device node, FIFO, directory or a link in
        // the output's place is someone else's (the CLI checks this too, earlier; this closes the
        // window between its check and here).
        std::vector<std::string> names{path};
        for (const char* suffix : sqlite_companions)
            names.push_back(path + suffix);
        for (const std::string& name : names) {
            struct stat st {};
            if (::lstat(name.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
                throw RecorderError(name + ": not a regular file (--force replaces only those)");
        }
        for (const std::string& name : names)
            ::unlink(name.c_str());
    }
    // A failed start removes what it created, and only that.
    std::array<bool, sqlite_companions.size()> companion_existed{};
    for (std::size_t i = 0; i < sqlite_companions.size(); ++i)
        companion_existed[i] = exists_as_anything(path + sqlite_companions[i]);
    // Create the file ourselves first: open(2) names the real problem (exists, no such directory,
    // permission denied) better than SQLite's "unable to open database file".
    file_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (file_fd_ < 0) {
        if (errno == EEXIST) throw RecorderError(path + ": file exists (use --force to overwrite)");
        const int error = errno;
        throw RecorderError(path + ": cannot create: " + std::strerror(error),
                            error == ENOSPC || error == EDQUOT);
    }
    // The fd is held, unused, until SQLite has closed the file: closing any fd of a file drops
    // the process's POSIX locks on it, SQLite's included.
    struct stat created {};
    ::fstat(file_fd_, &created);
    file_ = {created.st_dev, created.st_ino};
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(path, error);
    absolute_path_ = error ? path : absolute.string();
    base_name_ = absolute.filename().string();
    directory_fd_ =
        ::open(error ? "." : absolute.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    try {
        db_ = std::make_unique<sql::Database>(path, sql::open_read_write);
        // A page cache of 512 KiB, not SQLite's 2 MiB: the writer appends to the right edge of
        // each table (indexes are built at finish), a few dozen pages, while a default cache
        // filled with pages written once and grew the recorder by ~1.5 MiB over its first
        // minutes (docs/benchmarks-sampling.md, "The recorder's own memory").
        db_->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-512;");
        db_->exec(std::string("BEGIN;") + recording_schema_sql() +
                  "PRAGMA user_version=" + std::to_string(recording_schema_version) + "; COMMIT;");
        rows_ = std::make_unique<RowWriter>(*db_);
        residency_ = std::make_unique<ResidencyWriter>(*db_);
        loader_ = std::make_unique<LoaderWriter>(*db_, revision_);
        set_meta("format", recording_format);
        set_meta("state", "recording");
        set_meta("writer_pid", std::to_string(::getpid()));
        set_meta("host", recording_host_name());
        commit();
        if (directory_fd_ >= 0) {
            wal_ = named_at(directory_fd_, base_name_ + "-wal");
            shm_ = named_at(directory_fd_, base_name_ + "-shm");
        }
        next_check_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    } catch (const sql::Error& e) {
        loader_.reset();
        residency_.reset();
        rows_.reset();
        db_.reset();
        close_fds();
        ::unlink(path.c_str());
        for (std::size_t i = 0; i < sqlite_companions.size(); ++i)
            if (!companion_existed[i]) ::unlink((path + sqlite_companions[i]).c_str());
        const int primary = e.code & 0xff; // SQLITE_FULL, SQLITE_IOERR (extended codes too)
        throw RecorderError(path + ": cannot write recording: " + e.what(),
                            primary == SQLITE_FULL || primary == SQLITE_IOERR);
    }
}

Recorder::~Recorder() {
    try {
        commit();
        // Closed without finish() (an error path): SQLite folds the WAL into the main file and
        // deletes it on close. Leave the header in rollback mode too, so that a reader does not
        // take the deleted WAL for a lost one.
        if (!finished_ && lost_.empty()) db_->exec("PRAGMA journal_mode=DELETE");
    } catch (...) {
    }
    loader_.reset();
    residency_.reset();
    rows_.reset();
    db_.reset();
    // Bytes 18 and 19: file format write and read versions, 2 in WAL mode, 1 in rollback mode.
    constexpr unsigned char rollback_mode[2] = {1, 1};
    if (rollback_header_ && ::pwrite(file_fd_, rollback_mode, 2, 18) != 2) {
        // Left in WAL mode: a reader warns that the -wal may hold more; the data is all there.
    }
    close_fds();
}

void Recorder::close_fds() {
    if (file_fd_ >= 0) ::close(file_fd_);
    if (directory_fd_ >= 0) ::close(directory_fd_);
    file_fd_ = directory_fd_ = -1;
}

void Recorder::begin() {
    if (!lost_.empty()) throw RecorderError(lost_);
    if (!in_transaction_) {
        db_->exec("BEGIN");
        in_transaction_ = true;
    }
}

void Recorder::check_still_named(bool now) {
    if (!lost_.empty()) throw RecorderError(lost_);
    const auto t = std::chrono::steady_clock::now();
    if (!now && t < next_check_) return;
    next_check_ = t + std::chrono::seconds(1);
    // A few stat calls a second at most: SQLite would write on into a file nobody can find.
    bool unknown = false;
    const auto named = named_at(AT_FDCWD, absolute_path_, &unknown);
    if (unknown || named == file_) {
        if (directory_fd_ < 0 || !wal_) return;
        const auto wal = named_at(directory_fd_, base_name_ + "-wal", &unknown);
        if (unknown || wal == wal_) return;
        lost_ = "its -wal file was deleted or replaced while it was being written";
    } else if (directory_fd_ >= 0 && named_at(directory_fd_, base_name_) == file_) {
        lost_ = "a directory on its path was renamed or replaced while it was being written";
    } else if (named) {
        lost_ = "another file was put in its place while it was being written (that file is left "
                "as it is)";
    } else {
        struct stat st {};
        lost_ = ::fstat(file_fd_, &st) == 0 && st.st_nlink > 0
                    ? "it was renamed or moved away while it was being written"
                    : "it was deleted while it was being written";
    }
    stop_writing();
    throw RecorderError(lost_);
}

void Recorder::stop_writing() {
    try {
        if (in_transaction_) db_->exec("ROLLBACK");
    } catch (const sql::Error&) {
    }
    in_transaction_ = false;
    // What was committed goes into the file wherever it is now (renamed away, moved with its
    // directory): whole without the -wal it leaves behind.
    struct stat st {};
    bool folded = false;
    if (::fstat(file_fd_, &st) == 0 && st.st_nlink > 0) {
        try {
            auto checkpoint = db_->prepare("PRAGMA wal_checkpoint(TRUNCATE)");
            folded = checkpoint.step() && checkpoint.int64(0) == 0; // not busy: all of it
        } catch (const sql::Error&) {
        }
    }
    try {
        db_->keep_wal_on_close();
    } catch (const sql::Error&) {
    }
    // Our -wal and -shm must not be taken for those of whatever file gets the name now (SQLite
    // would apply our WAL to it). Beside the file itself (its directory moved) they stay with it,
    // unless its -wal is gone.
    if (directory_fd_ < 0) return;
    const bool beside = named_at(directory_fd_, base_name_) == file_;
    const bool wal_beside = beside && named_at(directory_fd_, base_name_ + "-wal").has_value();
    for (const auto& [suffix, ours] : {std::pair{"-wal", wal_}, std::pair{"-shm", shm_}}) {
        const std::string name = base_name_ + suffix;
        if (!wal_beside && ours && named_at(directory_fd_, name) == ours)
            ::unlinkat(directory_fd_, name.c_str(), 0);
    }
    // SQLite refuses to change the journal mode of a file that moved (SQLITE_READONLY_DBMOVED).
    // Once closed, the header says rollback mode, as PRAGMA journal_mode=DELETE would write it,
    // so that a reader does not look for a -wal that held nothing more.
    rollback_header_ = folded && !wal_beside;
}

void Recorder::commit() {
    check_still_named(false);
    if (!in_transaction_) return;
    demote_undeclared_workers();
    db_->exec("COMMIT");
    in_transaction_ = false;
}

void Recorder::demote_undeclared_workers() {
    // `replay`: once the loader's run ended (end_loader_run), the workers it declared are the
    // workers, with its slots and generations. A process the tracker had taken for one but the
    // loader did not declare (a helper that main started, say) becomes a helper, in the same
    // transaction; again at every later commit, should the tracker rewrite its row. Nothing to do
    // in `record`, or while the loader runs (a worker it forked may not be declared yet).
    if (!loader_ended_) return;
    auto demote = db_->prepare(
        "UPDATE processes SET role='helper', slot=NULL, generation=NULL, revision=? WHERE "
        "role='worker' AND id NOT IN (SELECT process_id FROM loader_workers WHERE process_id IS "
        "NOT NULL)");
    demote.bind(1, ++revision_).run();
}

void Recorder::set_meta(const std::string& key, const std::string& value) {
    begin();
    rows_->meta(key, value);
}

std::int64_t Recorder::object_id(const MappedObject& object) {
    auto key = std::make_tuple(std::string(to_string(object.kind)), object.path, object.inode);
    if (auto it = objects_.find(key); it != objects_.end()) {
        // Code is what any process maps executable, at any sample (docs/recording.md).
        if (object.executable && executable_objects_.insert(it->second).second)
            rows_->object_executable(it->second);
        return it->second;
    }
    std::optional<std::int64_t> size;
    struct stat st {};
    bool is_file = object.kind == MappingKind::file;
    if (is_file && ::stat(object.path.c_str(), &st) == 0 && st.st_ino == object.inode)
        size = static_cast<std::int64_t>(st.st_size);
    const std::int64_t id =
        rows_->object(object.kind, object.path, object.inode, size, object.executable);
    if (object.executable) executable_objects_.insert(id);
    objects_.emplace(std::move(key), id);
    return id;
}

void Recorder::write_process(const ProcessInfo& p, bool insert) {
    rows_->process(p, ++revision_, insert);
}

void Recorder::note_unavailable(std::int64_t t_ms, const Unavailability& problem) {
    if (!noted_.emplace(problem.process_id, problem.tier, problem.reason).second) return;
    rows_->unavailable(t_ms, problem);
}

void Recorder::write(const SampleBatch& b) {
    begin();
    const std::int64_t t = b.t_ms;
    for (const auto& p : b.born)
        write_process(p, true);
    for (const auto& p : b.renamed)
        write_process(p, false);
    for (const auto& p : b.exited)
        write_process(p, false);
    for (const auto& f : b.fast)
        rows_->fast(t, f);
    for (const auto& r : b.rollup)
        rows_->rollup(t, r);
    for (const auto& m : b.maps)
        for (const auto& o : m.objects)
            rows_->map(t, m.process_id, object_id(o), o);
    residency_->write(t, b.residency);
    if (b.cgroup) rows_->cgroup(t, *b.cgroup);
    if (b.system) rows_->system(t, *b.system);
    if (!b.loader.empty() || !b.loader.progress.empty() || !b.loader.status.empty())
        write_loader_events(b.loader);
    for (const auto& m : b.markers)
        rows_->marker(m);
    for (const auto& u : b.unavailable)
        note_unavailable(t, u);
    for (const auto& ts : b.tier_stats)
        rows_->tier(t, ts);
}

void Recorder::write_loader_events(const LoaderRun& run) {
    begin();
    if (!run.empty() || !run.status.empty()) loader_heard_ = true;
    if (!run.config_json.empty()) set_meta("loader.config", run.config_json);
    if (!run.status.empty()) set_meta("loader.status", run.status);
    if (!run.message.empty()) set_meta("loader.message", run.message);
    if (run.unreadable_lines > 0) {
        unreadable_loader_lines_ += run.unreadable_lines;
        set_meta("loader.unreadable_lines", std::to_string(unreadable_loader_lines_));
    }
    loader_->write(run);
}

void Recorder::end_loader_run() {
    // A loader that never said anything (it did not start): no account to end, nobody demoted.
    if (!loader_heard_) return;
    begin();
    loader_->reconcile();
    loader_ended_ = true;
    auto status = db_->prepare("SELECT EXISTS(SELECT 1 FROM meta WHERE key='loader.status')");
    if (status.step() && status.int64(0) == 0)
        set_meta("loader.status", "unknown (the loader did not finish)");
}

void Recorder::write_loader_run(const LoaderRun& run) {
    if (run.empty() && run.status.empty()) return;
    write_loader_events(run);
    end_loader_run();
}

void Recorder::finish(const std::string& state, std::int64_t end_ms) {
    check_still_named(true); // a recording is not called finished where nobody can find it
    finished_ = true;
    set_meta("state", state);
    set_meta("end_ms", std::to_string(end_ms));
    db_->exec("CREATE INDEX IF NOT EXISTS fast_by_process ON fast_samples(process_id, t_ms);"
              "CREATE INDEX IF NOT EXISTS rollup_by_process ON rollup_samples(process_id, t_ms);"
              "CREATE INDEX IF NOT EXISTS maps_by_object ON map_samples(object_id, t_ms);"
              "CREATE INDEX IF NOT EXISTS mapped_by_file ON mapped_residency(file_id, t_ms);");
    commit();
    // Fold the WAL into the main file so the recording is one file that can be copied alone.
    // A reader that still has it open (a live GUI) blocks this: the WAL file then stays, valid.
    try {
        db_->exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;");
    } catch (const sql::Error&) {
    }
}

} // namespace loaderlens
