// SPDX-License-Identifier: MIT
// One row of each recording table, bound column by column in the catalogue's order
// (recording_tables.hpp). The Recorder writes what the samplers hand it through this, and the
// merge (MergeWriter) the rows it read from the recordings it merges: a column added to a table
// is written the same way by both (private to the store layer).
#pragma once

#include "loaderlens/recording_data.hpp"
#include "loaderlens/sqlite.hpp"

#include <string>

namespace loaderlens {

class RowWriter {
  public:
    explicit RowWriter(sql::Database& db);

    void meta(const std::string& key, const std::string& value);
    // A new process row, or (update) the changed columns of one written before.
    void process(const ProcessInfo& process, std::int64_t revision, bool insert);
    void fast(std::int64_t t_ms, const FastSample& sample);
    void rollup(std::int64_t t_ms, const RollupSample& sample);
    // Inserts an object row and returns its id; `executable` empty: not known (NULL).
    std::int64_t object(MappingKind kind, const std::string& path, std::uint64_t inode,
                        const std::optional<std::int64_t>& size_bytes,
                        std::optional<bool> executable);
    // An object written before is seen mapped executable now (the dynamic loader maps a library
    // read-only before it maps its code: a sample may see the first mapping only).
    void object_executable(std::int64_t id);
    void map(std::int64_t t_ms, std::int64_t process_id, std::int64_t object_id,
             const MappedObject& figures);
    void cgroup(std::int64_t t_ms, const CgroupSample& sample);
    void system(std::int64_t t_ms, const SystemSample& sample);
    void marker(const Marker& marker);
    void unavailable(std::int64_t t_ms, const Unavailability& problem);
    void tier(std::int64_t t_ms, const TierStat& stat);

  private:
    sql::Database& db_;
    sql::Statement meta_, insert_process_, update_process_, fast_, rollup_, object_,
        object_executable_, map_, cgroup_, system_, marker_, unavailable_, tier_;
};

// A part id as stored: NULL outside a merged recording (part 0).
void bind_part(sql::Statement& statement, int index, int part);

} // namespace loaderlens
