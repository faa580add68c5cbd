// SPDX-License-Identifier: MIT
// Reads the residency tables past a cursor (private to the store layer). A row stores its bucket
// vector only when it changed or at a keyframe (every `residency_keyframe_rows` rows of a series);
// NULL means "as before". The cursor keeps the vectors in force; a cursor that starts mid-file
// finds a series' vector at its nearest earlier stored row, at most a keyframe interval back.
#pragma once

#include "loaderlens/cursor.hpp"
#include "loaderlens/recording_data.hpp"
#include "loaderlens/sqlite.hpp"

namespace loaderlens {

class TableReader;

class ResidencyDecoder {
  public:
    // Reads the tables through `tables` (the Recording's, whose statements stay prepared).
    ResidencyDecoder(sql::Database& db, TableReader& tables, std::int64_t schema)
        : db_(db), tables_(tables), schema_(schema) {}
    void read(Cursor& cursor, RecordingData& out);

  private:
    void files(Cursor& cursor, RecordingData& out);
    void cache(Cursor& cursor, RecordingData& out);
    void mapped(Cursor& cursor, RecordingData& out);
    // The series' last stored vector before `rowid` (a keyframe at worst), or empty.
    BucketCounts stored_before(const char* table, const char* column, const char* series,
                               std::int64_t rowid, const ResidencyFile& file,
                               std::int64_t process_id = -1);

    sql::Database& db_;
    TableReader& tables_;
    std::int64_t schema_;
};

} // namespace loaderlens
