// SPDX-License-Identifier: MIT
// Recording's reading of a merged recording's parts (schema 7, docs/merge.md): the parts table,
// and one part's rows at a time.
#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"
#include "recording_read.hpp"
#include "recording_tables.hpp"
#include "table_reader.hpp"

#include <algorithm>
#include <string_view>

namespace loaderlens {

std::vector<RecordingPart> Recording::parts() const {
    return read_recording(path_, [&] {
        Cursor cursor;
        RecordingData out;
        db_->exec("BEGIN");
        try {
            tables_->parts(cursor, out);
            db_->exec("COMMIT");
        } catch (...) {
            db_->exec("ROLLBACK");
            throw;
        }
        return std::move(out.parts);
    });
}

// A merged recording's rows that name a part its parts table does not hold would be read by no
// part: damage, said once before the first part is read.
void Recording::check_part_ids() const {
    if (parts_checked_) return;
    read_recording(path_, [&] {
        for (const recording_tables::Table& table : recording_tables::all()) {
            const auto& columns = table.columns;
            const bool has_part = std::string_view(table.name) != "part_meta" &&
                                  std::any_of(columns.begin(), columns.end(), [](const auto& c) {
                                      return std::string_view(c.name) == "part";
                                  });
            if (!has_part) continue;
            auto q = db_->prepare(std::string("SELECT part FROM ") + table.name +
                                  " WHERE part IS NULL OR part NOT IN (SELECT id FROM parts) "
                                  "LIMIT 1");
            if (q.step())
                throw RecordingError(path_ + ": recording is damaged: " + table.name +
                                     " has rows of part " +
                                     std::to_string(q.optional_int64(0).value_or(0)) +
                                     ", which table parts does not hold");
        }
    });
    parts_checked_ = true;
}

RecordingData Recording::read_part(int part) const {
    check_part_ids();
    tables_->filter_part(part);
    try {
        Cursor cursor;
        RecordingData out = read_new(cursor);
        tables_->filter_part(0);
        return out;
    } catch (...) {
        tables_->filter_part(0);
        throw;
    }
}

} // namespace loaderlens
