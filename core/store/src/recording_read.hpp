// SPDX-License-Identifier: MIT
// How the reader turns what goes wrong while it reads a recording into one RecordingError that
// names the file (private to core: recording.cpp, residency_store.cpp, the report and the export).
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"

#include <string>

namespace loaderlens {

// One line for an SQLite error met while reading: "recording is damaged or truncated (...)",
// "not a loaderlens recording (...)", "cannot open (...)", ...
std::string describe_sql_error(const sql::Error& e);

// Runs `read`; an SQLite error (a damaged page, a value of the wrong type) becomes a
// RecordingError naming `path`.
template <typename Read> auto read_recording(const std::string& path, Read&& read) {
    try {
        return read();
    } catch (const sql::Error& e) {
        throw RecordingError(path + ": " + describe_sql_error(e));
    }
}

// A file path stored in a recording: the kernel gives none longer than PATH_MAX (4096 bytes, plus
// " (deleted)"), so a longer one is damage (it would be written into every row of an export).
inline std::string checked_path(std::string path, const char* table, std::int64_t id) {
    constexpr std::size_t longest = 4096 + 32;
    if (path.size() > longest)
        throw sql::Error(std::string(table) + ".path of row " + std::to_string(id) + " holds " +
                             std::to_string(path.size()) + " bytes, longer than any path",
                         sql::error_mismatch);
    return path;
}

} // namespace loaderlens
