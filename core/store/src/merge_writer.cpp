// SPDX-License-Identifier: MIT
#include "loaderlens/merge_writer.hpp"

#include "loader_writer.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/sqlite.hpp"
#include "recording_tables.hpp"
#include "residency_writer.hpp"
#include "row_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace loaderlens {

namespace {

// The tables whose rows carry a time: put in time order across the parts at commit().
constexpr const char* timed_tables[] = {"fast_samples",     "rollup_samples", "map_samples",
                                        "cgroup_samples",   "system_samples", "markers",
                                        "unavailable",      "tier_stats",     "cache_residency",
                                        "mapped_residency", "loader_progress"};

bool no_room(int error) {
    return error == ENOSPC || error == EDQUOT || error == EIO || error == EFBIG;
}

mode_t new_file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
}

} // namespace

MergeWriter::MergeWriter(const std::string& path) : path_(path) {
    const std::filesystem::path target(path);
    const auto directory =
        target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    std::string pattern = (directory / ("." + target.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd < 0) {
        const int error = errno;
        throw MergeError(path + ": cannot create a file beside it: " + std::strerror(error),
                         no_room(error));
    }
    ::fchmod(fd, new_file_mode());
    ::close(fd);
    temporary_ = pattern;
    try {
        db_ = std::make_unique<sql::Database>(temporary_, sql::open_read_write);
        // No journal: the file is not a recording until commit() renames it, and a failure
        // removes it whole. One transaction holds every row.
        db_->exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
        db_->exec("BEGIN;" + recording_schema_sql() +
                  "PRAGMA user_version=" + std::to_string(recording_schema_version) + ";");
        rows_ = std::make_unique<RowWriter>(*db_);
        residency_ = std::make_unique<ResidencyWriter>(*db_);
        loader_ = std::make_unique<LoaderWriter>(*db_, revision_);
        rows_->meta("format", recording_format);
    } catch (const sql::Error& e) {
        fail(e.what(), e.code);
    }
}

MergeWriter::~MergeWriter() {
    loader_.reset();
    residency_.reset();
    rows_.reset();
    db_.reset();
    if (!committed_ && !temporary_.empty()) ::unlink(temporary_.c_str());
}

void MergeWriter::fail(const std::string& what, int code) {
    const int primary = code & 0xff;
    throw MergeError(path_ + ": cannot write the merged recording: " + what,
                     primary == SQLITE_FULL || primary == SQLITE_IOERR);
}

void MergeWriter::set_meta(const std::string& key, const std::string& value) {
    try {
        rows_->meta(key, value);
    } catch (const sql::Error& e) {
        fail(e.what(), e.code);
    }
}

int MergeWriter::add(RecordingPart part, const RecordingData& data) {
    part.id = ++parts_;
    const int id = part.id;
    const std::int64_t shift = part.offset_ms;
    auto at = [shift](std::int64_t t) { return saturating_add(t, shift); };
    try {
        auto insert = db_->prepare(recording_tables::insert_sql("parts"));
        insert.bind(1, std::int64_t{id}).bind(2, part.name).bind(3, part.host).bind(4, part.job);
        insert.bind(5, part.step).bind(6, part.task).bind(7, part.source).bind(8, part.schema);
        insert.bind(9, part.start_unix_ns).bind(10, part.offset_ms).bind(11, part.duration_ms);
        insert.bind(12, part.last_sample_ms).bind(13, part.end_state).run();
        auto meta = db_->prepare(recording_tables::insert_sql("part_meta"));
        for (const auto& [key, value] : data.meta)
            meta.bind(1, std::int64_t{id}).bind(2, key).bind(3, value).run();
        end_ms_ = std::max(end_ms_, at(part.duration_ms));

        // Processes in id order keep their order; a parent outside the tree stays 0.
        std::unordered_map<std::int64_t, std::int64_t> process;
        for (const ProcessInfo& p : data.processes)
            process[p.id] = ++next_process_;
        auto process_id = [&process](std::int64_t old) -> std::int64_t {
            auto it = process.find(old);
            return it == process.end() ? 0 : it->second;
        };
        for (ProcessInfo p : data.processes) {
            p.id = process_id(p.id);
            p.parent_id = process_id(p.parent_id);
            p.birth_ms = at(p.birth_ms);
            if (p.exit_ms) p.exit_ms = at(*p.exit_ms);
            p.part = id;
            rows_->process(p, ++revision_, true);
        }
        // Objects are names (kind, path, inode), shared by the parts that map the same one.
        std::unordered_map<std::int64_t, std::int64_t> object;
        for (const ObjectInfo& o : data.objects) {
            auto key = std::make_tuple(static_cast<int>(o.kind), o.path, o.inode);
            auto it = objects_.find(key);
            if (it == objects_.end()) {
                it = objects_
                         .emplace(key, rows_->object(o.kind, o.path, o.inode, o.size_bytes,
                                                     o.executable))
                         .first;
                if (o.executable.value_or(false)) executable_.insert(it->second);
            } else if (o.executable.value_or(false) && executable_.insert(it->second).second) {
                rows_->object_executable(it->second); // code in one part is code in all
            }
            object[o.id] = it->second;
        }
        // A sample row of a process the input does not hold (a damaged input) has nowhere to go.
        for (const auto& [t, s] : data.fast)
            if (const std::int64_t p = process_id(s.process_id)) {
                FastSample row = s;
                row.process_id = p;
                rows_->fast(at(t), row);
            }
        for (const auto& [t, s] : data.rollup)
            if (const std::int64_t p = process_id(s.process_id)) {
                RollupSample row = s;
                row.process_id = p;
                rows_->rollup(at(t), row);
            }
        for (const MapRow& m : data.maps) {
            auto o = object.find(m.object_id);
            const std::int64_t p = process_id(m.process_id);
            if (p && o != object.end()) rows_->map(at(m.t_ms), p, o->second, m.figures);
        }
        for (auto [t, c] : data.cgroup) {
            c.part = id;
            rows_->cgroup(at(t), c);
        }
        for (auto [t, s] : data.system) {
            s.part = id;
            rows_->system(at(t), s);
        }
        for (Marker m : data.markers) {
            m.t_ms = at(m.t_ms);
            m.part = id;
            rows_->marker(m);
        }
        for (auto [t, u] : data.unavailable) {
            u.process_id = process_id(u.process_id);
            u.part = id;
            rows_->unavailable(at(t), u);
        }
        for (auto [t, s] : data.tier_stats) {
            s.part = id;
            rows_->tier(at(t), s);
        }
        std::unordered_map<std::int64_t, std::int64_t> file;
        for (ResidencyFile f : data.residency_files) {
            file[f.id] = ++next_file_;
            f.id = next_file_;
            f.part = id;
            residency_->write(at(f.first_ms), {.new_files = {f}});
        }
        for (const auto& [t, c] : data.cache_residency)
            if (auto f = file.find(c.file_id); f != file.end()) {
                CacheResidency row = c;
                row.file_id = f->second;
                residency_->write(at(t), {.cache = {std::move(row)}});
            }
        for (const auto& [t, m] : data.mapped_residency) {
            auto f = file.find(m.file_id);
            const std::int64_t p = process_id(m.process_id);
            if (f == file.end() || !p) continue;
            MappedResidency row = m;
            row.file_id = f->second;
            row.process_id = p;
            residency_->write(at(t), {.mapped = {std::move(row)}});
        }
        LoaderRun run;
        for (LoaderEpoch e : data.loader.epochs) {
            e.start_ms = at(e.start_ms);
            e.end_ms = at(e.end_ms);
            e.part = id;
            run.epochs.push_back(e);
        }
        for (LoaderWorker w : data.loader.workers) {
            w.t_ms = at(w.t_ms);
            w.process_id = process_id(w.process_id);
            w.part = id;
            run.workers.push_back(w);
        }
        for (LoaderProgress p : data.loader.progress) {
            p.t_ms = at(p.t_ms);
            p.part = id;
            run.progress.push_back(std::move(p));
        }
        loader_->copy(run);
    } catch (const sql::Error& e) {
        fail(e.what(), e.code);
    }
    return id;
}

void MergeWriter::sort_by_time() {
    // Each part's rows were written together; an ordinary recording's tables hold their runs in
    // time order, which readers rely on (the last row is the latest, a tick's rows are together).
    // Rows at one time keep their order (rowid), so each residency series keeps its own order and
    // its "unchanged" NULLs still mean "as in the series' previous row".
    for (const char* name : timed_tables) {
        const recording_tables::Table& table = recording_tables::table(name);
        std::string create = "CREATE TABLE " + std::string(name) + "(";
        for (std::size_t i = 0; i < table.columns.size(); ++i)
            create +=
                (i ? ", " : "") + std::string(table.columns[i].name) + " " + table.columns[i].type;
        create += std::string(table.constraints) + ");";
        db_->exec("ALTER TABLE " + std::string(name) + " RENAME TO merge_unsorted;" + create +
                  "INSERT INTO " + name + " SELECT * FROM merge_unsorted ORDER BY t_ms, rowid;" +
                  "DROP TABLE merge_unsorted;");
    }
}

void MergeWriter::commit(bool replace) {
    try {
        sort_by_time();
        rows_->meta("state", "finished");
        rows_->meta("end_ms", std::to_string(end_ms_));
        rows_->meta("merged_parts", std::to_string(parts_));
        db_->exec("CREATE INDEX fast_by_process ON fast_samples(process_id, t_ms);"
                  "CREATE INDEX rollup_by_process ON rollup_samples(process_id, t_ms);"
                  "CREATE INDEX maps_by_object ON map_samples(object_id, t_ms);"
                  "CREATE INDEX mapped_by_file ON mapped_residency(file_id, t_ms);"
                  "COMMIT;");
        loader_.reset();
        residency_.reset();
        rows_.reset();
        db_.reset();
    } catch (const sql::Error& e) {
        fail(e.what(), e.code);
    }
    const int fd = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
        const int error = errno;
        if (fd >= 0) ::close(fd);
        throw MergeError(path_ + ": cannot write the merged recording: " + std::strerror(error),
                         no_room(error));
    }
    ::close(fd);
    if (replace)
        for (const char* suffix : {"-wal", "-shm", "-journal"})
            ::unlink((path_ + suffix).c_str()); // a new file must not be read with the old's WAL
    // Without `replace`, a file that appeared at the path since the caller looked stays.
    const int renamed = replace ? ::rename(temporary_.c_str(), path_.c_str())
                                : ::renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, path_.c_str(),
                                              RENAME_NOREPLACE);
    if (renamed != 0) {
        const int error = errno;
        throw MergeError(path_ + (error == EEXIST
                                      ? ": file exists (use --force to overwrite)"
                                      : ": cannot write: " + std::string(std::strerror(error))),
                         no_room(error));
    }
    committed_ = true;
}

} // namespace loaderlens
