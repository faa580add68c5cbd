// SPDX-License-Identifier: MIT
// Reads a recording, finished or still being written (WAL lets one writer and many readers work
// at once). The CLI report, the export and the GUI all read through this one API; `since_ms`
// lets a live reader fetch only what is new.
#pragma once

#include "loaderlens/loader_run.hpp"
#include "loaderlens/residency.hpp"
#include "loaderlens/types.hpp"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace loaderlens {

namespace sql {
class Database;
}

// Why a recording cannot be read: one line (control characters in it, say a newline in a file
// name or in SQLite's text, escaped by one_line()) that names the file. The CLI exits 2 on it.
struct RecordingError : std::runtime_error {
    explicit RecordingError(const std::string& what);
};

template <typename Sample> struct Timed {
    std::int64_t t_ms;
    Sample sample;
};

struct ObjectInfo {
    std::int64_t id = 0;
    MappingKind kind = MappingKind::file;
    std::string path;
    std::uint64_t inode = 0;
    std::optional<std::int64_t> size_bytes;
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

struct MapRow {
    std::int64_t t_ms = 0, process_id = 0, object_id = 0;
    MappedObject figures; // kind/path/inode left empty: see objects()
};

class Recording {
  public:
    // Throws RecordingError with a one-line reason: missing, not SQLite, not a recording, a newer
    // schema, damaged or truncated (PRAGMA quick_check), a table or a column the reader needs is
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

    std::vector<ProcessInfo> processes() const;
    std::vector<ObjectInfo> objects() const;
    std::vector<Timed<FastSample>> fast(std::int64_t since_ms = -1) const;
    std::vector<Timed<RollupSample>> rollup(std::int64_t since_ms = -1) const;
    std::vector<MapRow> maps(std::int64_t since_ms = -1) const;
    std::vector<Timed<CgroupSample>> cgroup(std::int64_t since_ms = -1) const;
    std::vector<Timed<SystemSample>> system(std::int64_t since_ms = -1) const;
    std::vector<Marker> markers() const;
    std::vector<Timed<Unavailability>> unavailable() const;
    std::vector<Timed<TierStat>> tier_stats() const;
    // Residency (empty for recordings older than schema 3). Rows in time order with every bucket
    // vector filled in, also where the recording stored "unchanged".
    std::vector<ResidencyFile> residency_files() const;
    std::vector<Timed<CacheResidency>> cache_residency(std::int64_t since_ms = -1) const;
    std::vector<Timed<MappedResidency>> mapped_residency(std::int64_t since_ms = -1) const;
    // What the reference loader reported (empty unless the run came from `loaderlens replay`).
    LoaderRun loader_run() const;
    // The last time any sample was taken (ms since start), -1 for an empty recording.
    std::int64_t last_sample_ms() const;

  private:
    std::optional<std::string> meta_value(const std::string& key) const; // nullopt: no such key
    bool writer_alive(std::int64_t pid) const;
    LoaderRun read_loader_run() const;

    std::string path_;
    std::string missing_wal_;
    std::unique_ptr<sql::Database> db_;
};

} // namespace loaderlens
