// SPDX-License-Identifier: MIT
// The tables and columns the reader reads, checked when a recording is opened: a table rebuilt
// without a column, or dropped, makes the recording damaged (one line naming the file, the table
// and the column) instead of failing halfway through a report or being read shifted.
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"
#include "recording_tables.hpp"

#include <algorithm>
#include <string>

namespace loaderlens::recording_schema {

// Throws RecordingError naming `path` for the first table the reader needs that is missing or
// lacks a column it selects (what schemas newer than the file's added is not needed).
inline void check(sql::Database& db, const std::string& path, std::int64_t schema) {
    for (const recording_tables::Table& table : recording_tables::all()) {
        if (schema < table.since) continue;
        const std::vector<std::string> present = db.column_names(table.name);
        if (present.empty())
            throw RecordingError(path + ": recording is damaged: table " + table.name +
                                 " is missing");
        for (const recording_tables::Column& column : table.columns)
            if (schema >= column.since &&
                std::find(present.begin(), present.end(), column.name) == present.end())
                throw RecordingError(path + ": recording is damaged: table " + table.name +
                                     " has no column " + column.name);
    }
}

} // namespace loaderlens::recording_schema
