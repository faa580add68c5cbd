// SPDX-License-Identifier: MIT
// Writes a recording: one SQLite file in WAL mode (schema: docs/recording.md). The session calls
// commit() at least once a second, so a recorder killed with SIGKILL loses at most that second;
// finish() checkpoints the WAL into the main file and leaves a single self-contained file.
#pragma once

#include "loaderlens/loader_run.hpp"
#include "loaderlens/sample_batch.hpp"
#include "loaderlens/sqlite.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

namespace loaderlens {

// The schema this loaderlens writes (history: docs/recording.md).
inline constexpr int recording_schema_version = 9;
inline constexpr const char* recording_format = "loaderlens-recording";

// The name a recording gives its host (meta `host`): SLURMD_NODENAME inside a SLURM job, else
// the host name. A reader takes a recording being written on this host for live by it.
std::string recording_host_name();

class ResidencyWriter;
class LoaderWriter;
class RowWriter;

struct RecorderError : std::runtime_error {
    explicit RecorderError(const std::string& what, bool no_room = false)
        : std::runtime_error(what), out_of_space(no_room) {}
    // The file could not be written (disk or quota full, an I/O error), as opposed to a problem
    // with the name given (exists, no such directory, permission denied).
    bool out_of_space;
};

class Recorder {
  public:
    // Creates `path`. Refuses an existing file unless `overwrite`. Throws RecorderError with a
    // one-line reason (exists, directory missing, permission denied...). The first transaction
    // says who writes it (meta writer_pid and host) along with state "recording", so that a
    // reader never sees a recording in progress without its writer, which it would take for a
    // cut one.
    Recorder(const std::string& path, bool overwrite);
    ~Recorder();

    void set_meta(const std::string& key, const std::string& value);
    void write(const SampleBatch& batch);
    void commit();
    // state: "finished" (the command ended) or "interrupted" (stopped by a signal).
    void finish(const std::string& state, std::int64_t end_ms);
    // What the reference loader reported since the last call, kept as it arrives (a live reader
    // sees epochs, workers and progress during the run). A worker's process gets the loader's slot
    // and generation (the tracker's own guess from birth order is usually the same).
    void write_loader_events(const LoaderRun& events);
    // The loader's run ended: workers are matched to processes the tracker saw late, the status
    // is "unknown" if the loader never said, and processes the tracker took for workers but the
    // loader did not declare become helpers when this transaction commits.
    void end_loader_run();
    // Both at once (a loader's whole account read after the run).
    void write_loader_run(const LoaderRun& run);
    const std::string& path() const { return path_; }

  private:
    std::int64_t object_id(const MappedObject& object);
    void note_unavailable(std::int64_t t_ms, const Unavailability& problem);
    void write_process(const ProcessInfo& info, bool insert);
    void demote_undeclared_workers();
    void begin();
    // Throws RecorderError when `path` no longer names the file written (deleted, renamed away,
    // another file or directory put in its place) or its -wal is not the one written: at most
    // once a second unless `now`. Writing then stops for good (stop_writing).
    void check_still_named(bool now);
    void stop_writing();
    void close_fds();

    // Which file a name leads to: st_dev, st_ino.
    using Identity = std::pair<unsigned long long, unsigned long long>;

    std::string path_;
    // Where the file was created: the absolute name (SQLite's too), and its directory held open
    // so that the -wal and -shm beside the file are found even if a directory above is moved.
    std::string absolute_path_, base_name_;
    int directory_fd_ = -1;
    int file_fd_ = -1; // the file created, held until SQLite closed it: deleted or only renamed
    Identity file_{};
    std::optional<Identity> wal_, shm_;
    std::chrono::steady_clock::time_point next_check_{};
    std::string lost_;             // why writing stopped (the file lost its name), or empty
    bool rollback_header_ = false; // the WAL was folded into the file, renamed away: see ~Recorder
    std::unique_ptr<sql::Database> db_;
    std::unique_ptr<RowWriter> rows_;
    std::unique_ptr<ResidencyWriter> residency_;
    std::unique_ptr<LoaderWriter> loader_;
    std::map<std::tuple<std::string, std::string, std::uint64_t>, std::int64_t> objects_;
    std::set<std::int64_t> executable_objects_; // written with executable = 1
    std::set<std::tuple<std::int64_t, std::string, std::string>> noted_;
    int unreadable_loader_lines_ = 0;
    bool loader_heard_ = false, loader_ended_ = false;
    std::int64_t revision_ = 0; // of the last process row written (processes.revision)
    bool in_transaction_ = false;
    bool finished_ = false;
};

// The schema, shared with tests that build fixtures.
std::string recording_schema_sql();

} // namespace loaderlens
