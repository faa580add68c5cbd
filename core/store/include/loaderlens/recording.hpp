// SPDX-License-Identifier: MIT
// Reads a recording, finished or still being written (WAL lets one writer and many readers work
// at once). The CLI report, the export and the GUI all read through this one API: read_new() with
// a cursor gives what is new since the last read, and a finished file is one read_new() from an
// empty cursor.
#pragma once

#include "loaderlens/cursor.hpp"
#include "loaderlens/recording_data.hpp"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace loaderlens {

namespace sql {
class Database;
}
class TableReader;
class ResidencyDecoder;

// Why a recording cannot be read: one line (control characters in it, say a newline in a file
// name or in SQLite's text, escaped by one_line()) that names the file. The CLI exits 2 on it.
struct RecordingError : std::runtime_error {
    explicit RecordingError(const std::string& what);
};

// How a recording ended. `finished`: the recorder wrote its end (meta state finished or
// interrupted, and end_ms). `being_written`: not yet, and its recorder (meta writer_pid) is a live
// loaderlens process on this host. `cut`: the recorder stopped without finishing: killed outright
// (SIGKILL from SLURM's OverMemoryKill or the OOM killer), after a signal it had noted, or when a
// write failed (a full disk); also a recording that says finished but holds no end_ms.
struct RecordingEnd {
    enum class State { finished, being_written, cut };
    State state = State::finished;
    std::int64_t last_sample_ms = -1;       // -1: no sample at all
    std::optional<std::int64_t> end_ms;     // meta end_ms (finished only)
    std::optional<std::string> signal;      // meta signal_received (strsignal text), if any
    std::optional<std::int64_t> signal_ms;  // meta signal_received_ms, when it was written
    std::optional<std::int64_t> writer_pid; // meta writer_pid
    // Cut only: the file system holding the file has (almost) no space left now, the likely cause.
    bool file_system_full = false;
};

// What a whole read leaves out. Each mapped_residency row carries its own copy of the bucket
// vector in force (1 KiB at 256 buckets), although the report and the CSV export read only its
// page counts: on a 1 h x 32-worker recording those copies were a third of the report's peak RSS
// (docs/benchmarks-reading.md). Without them, MappedResidency::buckets stays empty; a stored
// vector's length is still checked against its file, so a damaged BLOB is found either way.
struct ReadScope {
    bool mapped_buckets = true;
};

// One thread at a time per Recording (its SQLite connection is opened without SQLite's own lock);
// a reader on another thread opens its own.
class Recording {
  public:
    // Throws RecordingError with a one-line reason: missing, not SQLite, not a recording, a newer
    // schema, damaged or truncated (the header's page count; PRAGMA quick_check too for files up to
    // 64 MiB), a table or a column the reader needs is
    // missing, or its data is in a FILE-wal that is missing. Creates nothing beside the file when
    // it cannot be written (another user's, a read-only directory).
    // Every method below throws RecordingError naming the file when what it reads is damaged: an
    // SQLite error, a value of the wrong type, a BLOB whose length does not match its layout.
    explicit Recording(const std::string& path);
    ~Recording();
    Recording(Recording&&) noexcept;

    const std::string& path() const { return path_; }
    std::string meta(const std::string& key, const std::string& fallback = "") const;
    // Every meta value that holds a number is read through this: nullopt when the key is absent;
    // throws RecordingError naming the file, the key and the value when it is not an integer.
    std::optional<std::int64_t> meta_number(const std::string& key) const;
    std::map<std::string, std::string> all_meta() const;
    // meta state: recording, or finished / interrupted (anything else: RecordingError).
    bool finished() const;
    RecordingEnd end() const;
    // The main file is in WAL mode and its FILE-wal is not beside it (copied alone): the newest
    // data may be missing. The missing file's path, or empty.
    const std::string& missing_wal() const { return missing_wal_; }

    // Everything new since `cursor`, read in one transaction (a consistent snapshot), and the
    // cursor moved past it. An empty cursor reads the whole recording.
    RecordingData read_new(Cursor& cursor) const;
    // Whether anything was committed since the cursor's last read (PRAGMA data_version: cheap).
    bool has_new(const Cursor& cursor) const;
    // A cursor at the current end: read_new() then gives only what comes after (a live view that
    // starts now). Residency vectors are found from the nearest keyframe when first needed.
    Cursor cursor_at_end() const;
    // The whole recording (read_new from an empty cursor).
    RecordingData read_all() const;
    // The same, leaving out what `scope` says (a one-shot read: no cursor to continue from).
    RecordingData read_all(const ReadScope& scope) const;
    // Of a merged recording (schema 7): the rows of one part alone, as read_all() gives them
    // (times on the job's axis, every part and the file's own meta). A reader of one part at a
    // time holds one node's rows, not the job's.
    RecordingData read_part(int part) const;

    // One table each, whole (for tests and tools that want one thing).
    std::vector<ProcessInfo> processes() const;
    std::vector<ObjectInfo> objects() const;
    std::vector<Timed<FastSample>> fast() const;
    std::vector<Timed<RollupSample>> rollup() const;
    std::vector<MapRow> maps() const;
    std::vector<Timed<CgroupSample>> cgroup() const;
    std::vector<Timed<SystemSample>> system() const;
    std::vector<Marker> markers() const;
    std::vector<Timed<Unavailability>> unavailable() const;
    std::vector<Timed<TierStat>> tier_stats() const;
    std::vector<ResidencyFile> residency_files() const; // empty before schema 3
    std::vector<Timed<CacheResidency>> cache_residency() const;
    std::vector<Timed<MappedResidency>> mapped_residency() const;
    // What the reference loader reported (empty unless the run came from `loaderlens replay`).
    LoaderRun loader_run() const;
    // A merged recording's inputs (`loaderlens merge`, schema 7), in id order; empty for any
    // other recording.
    std::vector<RecordingPart> parts() const;
    // The last time any sample was taken (ms since start), -1 for an empty recording.
    std::int64_t last_sample_ms() const;
    std::int64_t schema() const { return schema_; }

  private:
    std::optional<std::string> meta_value(const std::string& key) const; // nullopt: no such key
    bool writer_alive(std::int64_t pid) const;
    RecordingData read(Cursor& cursor, const ReadScope& scope) const;
    void check_part_ids() const;

    std::string path_;
    std::string missing_wal_;
    std::int64_t schema_ = 0;
    std::unique_ptr<sql::Database> db_;
    std::unique_ptr<TableReader> tables_;
    std::unique_ptr<ResidencyDecoder> residency_;
    mutable bool parts_checked_ = false; // check_part_ids() found nothing
};

} // namespace loaderlens
