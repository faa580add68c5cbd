// SPDX-License-Identifier: MIT
// Writes a merged recording (`loaderlens merge`, docs/merge.md): the rows of several recordings
// (one per node, step or task of a job) in one file of the ordinary schema, each input a part
// (table parts), its rows tagged with the part, their ids renumbered for this file and their
// times shifted by the part's offset onto one time axis. The file is written under a temporary
// name beside its path in one transaction and renamed into place by commit(): an error, a full
// disk or an interrupt never leaves a partial file under the path.
#pragma once

#include "loaderlens/recording_data.hpp"

#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

namespace loaderlens {

namespace sql {
class Database;
}
class RowWriter;
class ResidencyWriter;
class LoaderWriter;

struct MergeError : std::runtime_error {
    MergeError(const std::string& what, bool no_room)
        : std::runtime_error(what), out_of_space(no_room) {}
    bool out_of_space; // the file could not be written (disk or quota full, I/O error)
};

class MergeWriter {
  public:
    // Creates the temporary file beside `path` (".NAME.XXXXXX"). Throws MergeError (one line).
    explicit MergeWriter(const std::string& path);
    // Removes the temporary file unless commit() renamed it.
    ~MergeWriter();
    MergeWriter(const MergeWriter&) = delete;
    MergeWriter& operator=(const MergeWriter&) = delete;

    const std::string& temporary_path() const { return temporary_; }
    // Adds one input, in start order: its id is assigned here (1, 2, ...) and returned. Every row
    // of `data` (a whole recording, read_all()) is written with the part's id, its process, object
    // and residency file ids renumbered, its times + part.offset_ms.
    int add(RecordingPart part, const RecordingData& data);
    void set_meta(const std::string& key, const std::string& value);
    // Puts every sample table in time order (the ordinary recording's order: each table's runs
    // come in time order), indexes it, writes the end, syncs and renames the file over `path`:
    // an existing one (and its -wal, -shm, -journal) only when `replace`.
    void commit(bool replace);

  private:
    void fail(const std::string& what, int code);
    void sort_by_time();

    std::string path_, temporary_;
    bool committed_ = false;
    std::unique_ptr<sql::Database> db_;
    std::unique_ptr<RowWriter> rows_;
    std::unique_ptr<ResidencyWriter> residency_;
    std::unique_ptr<LoaderWriter> loader_;
    std::map<std::tuple<int, std::string, std::uint64_t>, std::int64_t> objects_;
    std::set<std::int64_t> executable_; // objects written with executable = 1
    std::int64_t next_process_ = 0, next_file_ = 0, revision_ = 0, end_ms_ = 0;
    int parts_ = 0;
};

} // namespace loaderlens
