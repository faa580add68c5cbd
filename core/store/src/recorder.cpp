// SPDX-License-Identifier: MIT
#include "loaderlens/recorder.hpp"

#include "loader_writer.hpp"
#include "recording_tables.hpp"
#include "residency_writer.hpp"

#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace loaderlens {

static_assert(recording_schema_version == recording_tables::schema_version);

std::string recording_schema_sql() {
    return recording_tables::create_sql();
}

struct Recorder::Statements {
    explicit Statements(sql::Database& db)
        : meta(db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")),
          insert_process(db.prepare(recording_tables::insert_sql("processes"))),
          update_process(db.prepare(
              "UPDATE processes SET ppid=?4, parent_id=?5, comm=?6, cmdline=?7, role=?8, slot=?9, "
              "generation=?10, birth_ms=?11, exit_ms=?12, exit_status=?13, revision=?14 WHERE "
              "id=?1 AND pid=?2 AND start_ticks=?3")),
          fast(db.prepare(recording_tables::insert_sql("fast_samples"))),
          rollup(db.prepare(recording_tables::insert_sql("rollup_samples"))),
          object(db.prepare(recording_tables::insert_sql("objects", {"id"}))),
          map(db.prepare(recording_tables::insert_sql("map_samples"))),
          cgroup(db.prepare(recording_tables::insert_sql("cgroup_samples"))),
          system(db.prepare(recording_tables::insert_sql("system_samples"))),
          marker(db.prepare(recording_tables::insert_sql("markers"))),
          unavailable(db.prepare(recording_tables::insert_sql("unavailable"))),
          tier(db.prepare(recording_tables::insert_sql("tier_stats"))) {}
    sql::Statement meta, insert_process, update_process, fast, rollup, object, map, cgroup, system,
        marker, unavailable, tier;
};

namespace {

constexpr std::array<const char*, 3> sqlite_companions{"-wal", "-shm", "-journal"};

bool exists_as_anything(const std::string& name) {
    struct stat st {};
    return ::lstat(name.c_str(), &st) == 0;
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
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST) throw RecorderError(path + ": file exists (use --force to overwrite)");
        const int error = errno;
        throw RecorderError(path + ": cannot create: " + std::strerror(error),
                            error == ENOSPC || error == EDQUOT);
    }
    ::close(fd);
    try {
        db_ = std::make_unique<sql::Database>(path, sql::open_read_write);
        db_->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
        db_->exec(std::string("BEGIN;") + recording_schema_sql() +
                  "PRAGMA user_version=" + std::to_string(recording_schema_version) + "; COMMIT;");
        statements_ = std::make_unique<Statements>(*db_);
        residency_ = std::make_unique<ResidencyWriter>(*db_);
        loader_ = std::make_unique<LoaderWriter>(*db_, revision_);
        set_meta("format", recording_format);
        set_meta("state", "recording");
        commit();
    } catch (const sql::Error& e) {
        loader_.reset();
        residency_.reset();
        statements_.reset();
        db_.reset();
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
        if (!finished_) db_->exec("PRAGMA journal_mode=DELETE");
    } catch (...) {
    }
    loader_.reset();
    residency_.reset();
    statements_.reset();
}

void Recorder::commit() {
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
    if (!in_transaction_) {
        db_->exec("BEGIN");
        in_transaction_ = true;
    }
    statements_->meta.bind(1, key).bind(2, value).run();
}

std::int64_t Recorder::object_id(const MappedObject& object) {
    auto key = std::make_tuple(std::string(to_string(object.kind)), object.path, object.inode);
    if (auto it = objects_.find(key); it != objects_.end()) return it->second;
    auto& insert = statements_->object;
    insert.bind(1, std::get<0>(key))
        .bind(2, object.path)
        .bind(3, static_cast<std::int64_t>(object.inode));
    struct stat st {};
    bool is_file = object.kind == MappingKind::file;
    if (is_file && ::stat(object.path.c_str(), &st) == 0 && st.st_ino == object.inode)
        insert.bind(4, static_cast<std::int64_t>(st.st_size));
    insert.run();
    std::int64_t id = db_->last_insert_rowid();
    objects_.emplace(std::move(key), id);
    return id;
}

void Recorder::write_process(const ProcessInfo& p, bool insert) {
    auto& s = insert ? statements_->insert_process : statements_->update_process;
    s.bind(1, p.id)
        .bind(2, std::int64_t{p.key.pid})
        .bind(3, static_cast<std::int64_t>(p.key.start_ticks));
    s.bind(4, std::int64_t{p.ppid}).bind(5, p.parent_id).bind(6, p.comm).bind(7, p.cmdline);
    s.bind(8, std::string(to_string(p.role)));
    if (p.role == Role::worker)
        s.bind(9, std::int64_t{p.slot}).bind(10, std::int64_t{p.generation});
    s.bind(11, p.birth_ms).bind(12, Kib(p.exit_ms));
    if (p.exit_status) s.bind(13, std::int64_t{*p.exit_status});
    s.bind(14, ++revision_); // a reader's cursor sees the row again (Cursor::process_revision)
    s.run();
}

void Recorder::note_unavailable(std::int64_t t_ms, const Unavailability& problem) {
    if (!noted_.emplace(problem.process_id, problem.tier, problem.reason).second) return;
    statements_->unavailable.bind(1, t_ms).bind(2, problem.process_id).bind(3, problem.tier);
    statements_->unavailable.bind(4, problem.reason).run();
}

void Recorder::write(const SampleBatch& b) {
    if (!in_transaction_) {
        db_->exec("BEGIN");
        in_transaction_ = true;
    }
    const std::int64_t t = b.t_ms;
    for (const auto& p : b.born)
        write_process(p, true);
    for (const auto& p : b.renamed)
        write_process(p, false);
    for (const auto& p : b.exited)
        write_process(p, false);
    for (const auto& f : b.fast) {
        statements_->fast.bind(1, t).bind(2, f.process_id).bind(3, f.rss).bind(4, f.rss_anon);
        statements_->fast.bind(5, f.rss_file).bind(6, f.rss_shmem).bind(7, f.swap).run();
    }
    for (const auto& r : b.rollup) {
        auto& s = statements_->rollup;
        s.bind(1, t).bind(2, r.process_id).bind(3, r.rss).bind(4, r.pss).bind(5, r.pss_anon);
        s.bind(6, r.pss_file).bind(7, r.pss_shmem).bind(8, r.shared_clean).bind(9, r.shared_dirty);
        s.bind(10, r.private_clean).bind(11, r.private_dirty).bind(12, r.swap).bind(13, r.swap_pss);
        s.bind(14, r.locked).bind(15, r.age_ms).bind(16, r.pss_computed).run();
    }
    for (const auto& m : b.maps) {
        for (const auto& o : m.objects) {
            std::int64_t id = object_id(o);
            auto& s = statements_->map;
            s.bind(1, t).bind(2, m.process_id).bind(3, id).bind(4, o.size_kb).bind(5, o.rss_kb);
            s.bind(6, o.pss_kb).bind(7, o.shared_clean_kb).bind(8, o.shared_dirty_kb);
            s.bind(9, o.private_clean_kb).bind(10, o.private_dirty_kb).bind(11, o.swap_kb).run();
        }
    }
    residency_->write(t, b.residency);
    if (b.cgroup) {
        const auto& c = *b.cgroup;
        auto& s = statements_->cgroup;
        s.bind(1, t).bind(2, c.version).bind(3, c.path).bind(4, c.usage).bind(5, c.peak);
        s.bind(6, c.limit).bind(7, std::int64_t{c.unlimited}).bind(8, c.anon).bind(9, c.file);
        s.bind(10, c.shmem).bind(11, c.file_mapped).bind(12, c.active_file);
        s.bind(13, c.inactive_file).bind(14, Kib(c.failcnt)).bind(15, Kib(c.oom_kill)).run();
    }
    if (b.system) {
        const auto& y = *b.system;
        auto& s = statements_->system;
        s.bind(1, t).bind(2, y.mem_total).bind(3, y.mem_available).bind(4, y.cached);
        s.bind(5, y.shmem).bind(6, y.dirty).bind(7, y.devshm_used).bind(8, y.devshm_size);
        s.bind(9, y.active_file).bind(10, y.inactive_file).bind(11, y.writeback);
        s.bind(12, y.kreclaimable).run();
    }
    if (!b.loader.empty() || !b.loader.progress.empty() || !b.loader.status.empty())
        write_loader_events(b.loader);
    for (const auto& m : b.markers)
        statements_->marker.bind(1, m.t_ms).bind(2, m.source).bind(3, m.text).run();
    for (const auto& u : b.unavailable)
        note_unavailable(t, u);
    for (const auto& ts : b.tier_stats) {
        auto& s = statements_->tier;
        s.bind(1, t).bind(2, ts.tier).bind(3, ts.interval_ms).bind(4, ts.cpu_us_per_run);
        s.bind(5, std::int64_t{ts.processes}).run();
    }
}

void Recorder::write_loader_events(const LoaderRun& run) {
    if (!in_transaction_) {
        db_->exec("BEGIN");
        in_transaction_ = true;
    }
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
    if (!in_transaction_) {
        db_->exec("BEGIN");
        in_transaction_ = true;
    }
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
