// SPDX-License-Identifier: MIT
// How the reader opens a recording file (private to recording.cpp): WAL mode with or without its
// -wal and -shm, read-only and creating nothing beside the file, and the integrity check first.
#pragma once

#include "loaderlens/sqlite.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace loaderlens::recording_open {

inline bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// Bytes 18 and 19 of the SQLite header (file format write and read versions) are 2 in WAL mode.
inline bool wal_mode_header(const std::string& path) {
    char header[20] = {};
    std::ifstream in(path, std::ios::binary);
    return in.read(header, sizeof header) && std::memcmp(header, "SQLite format 3", 16) == 0 &&
           header[18] == 2 && header[19] == 2;
}

inline std::string file_uri(const std::string& path) {
    std::error_code error; // no working directory (deleted): SQLite gets the path as it is
    std::string absolute = std::filesystem::absolute(path, error).string();
    if (error) absolute = path;
    absolute.erase(0, absolute.find_first_not_of('/') - 1); // "//x" would name a host
    std::string uri = "file:";
    for (const unsigned char c : absolute) {
        if (std::isalnum(c) || std::strchr("/-._~", c)) {
            uri += static_cast<char>(c);
        } else {
            char escaped[4];
            std::snprintf(escaped, sizeof escaped, "%%%02X", c);
            uri += escaped;
        }
    }
    return uri;
}

// How the reader opens a recording, from the files beside it. A live writer keeps FILE-wal and
// FILE-shm, so without either there is none, and SQLite must not create what is missing: it cannot
// where the reader may not write (another user's recording, a read-only directory or mount), and
// an empty -wal it made would hide that the real one is lost.
enum class OpenMode {
    shared,          // as SQLite opens it: with a live writer's -wal and -shm, or a rollback file
    wal_without_shm, // FILE-wal without FILE-shm: read with no locking (unix-none) in exclusive
                     // mode, in which SQLite reads the WAL into an index in memory
    wal_missing,     // a WAL-mode header and no FILE-wal: read as it is (immutable), or SQLite
                     // would create an empty FILE-wal (O_CREAT even read-only)
};

inline OpenMode open_mode(bool wal_header, bool has_wal, bool has_shm) {
    if (wal_header && !has_wal) return OpenMode::wal_missing;
    if (has_wal && !has_shm) return OpenMode::wal_without_shm;
    return OpenMode::shared;
}

// Read-only, and (sql::Database) never checkpointing nor deleting FILE-wal on close.
inline std::unique_ptr<sql::Database> open_reader(const std::string& path, OpenMode mode) {
    switch (mode) {
    case OpenMode::shared:
        break;
    case OpenMode::wal_without_shm: {
        auto db = std::make_unique<sql::Database>(file_uri(path) + "?mode=ro&vfs=unix-none",
                                                  sql::open_read_only | sql::open_uri);
        db->exec("PRAGMA locking_mode=EXCLUSIVE");
        return db;
    }
    case OpenMode::wal_missing:
        return std::make_unique<sql::Database>(file_uri(path) + "?mode=ro&immutable=1",
                                               sql::open_read_only | sql::open_uri);
    }
    return std::make_unique<sql::Database>(path, sql::open_read_only);
}

// `how`: "missing", or "empty" (the -wal beside it is not the recording's: its data is lost).
inline std::string lost_wal_message(const std::string& path, const std::string& how) {
    const std::string name = std::filesystem::path(path).filename().string();
    return path + ": the recording's data is in " + path + "-wal, which is " + how + ": copy " +
           name + "-wal (and " + name + "-shm) along with " + name;
}

inline std::uintmax_t file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uintmax_t>(st.st_size) : 0;
}

// Files up to this size get PRAGMA quick_check when opened (it reads every page: O(size)).
inline constexpr std::uintmax_t quick_check_largest_file = 64u << 20;

// A main file shorter than its header says (a copy cut short): the header's page count (offset
// 28, valid when the change counter at 24 equals the one at 92) times its page size (offset 16,
// 1 meaning 65536). Empty when it holds all its pages or the header does not say.
inline std::string truncation_problem(const std::string& path) {
    unsigned char header[100] = {};
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(header), sizeof header)) return {};
    auto be32 = [&](int at) {
        return (std::uint32_t{header[at]} << 24) | (std::uint32_t{header[at + 1]} << 16) |
               (std::uint32_t{header[at + 2]} << 8) | header[at + 3];
    };
    const std::uint32_t page = (std::uint32_t{header[16]} << 8) | header[17];
    const std::uintmax_t page_size = page == 1 ? 65536 : page;
    if (be32(24) != be32(92) || page_size < 512) return {};
    const std::uintmax_t pages = be32(28), expected = pages * page_size, size = file_size(path);
    if (size >= expected) return {};
    return "the header says " + std::to_string(pages) + " pages of " + std::to_string(page_size) +
           " bytes, the file holds " + std::to_string(size) + " bytes";
}

// What PRAGMA quick_check found, as one line; empty when it says ok. Its text spans lines
// ("*** in database main ***", then a line per problem), and a row comes per problem.
inline std::string quick_check_problems(sql::Database& db) {
    constexpr std::size_t shown = 3;
    auto check = db.prepare("PRAGMA quick_check(100)");
    std::vector<std::string> problems;
    while (check.step()) {
        std::istringstream rows(check.text(0));
        for (std::string line; std::getline(rows, line);) {
            line.erase(0, line.find_first_not_of(" \t\r"));
            line.erase(line.find_last_not_of(" \t\r") + 1);
            if (line == "ok" && problems.empty()) return {};
            if (!line.empty() && !line.starts_with("*** in database")) problems.push_back(line);
        }
    }
    std::string out;
    for (std::size_t i = 0; i < problems.size() && i < shown; ++i)
        out += (i ? "; " : "") + problems[i].substr(0, 200);
    if (problems.size() > shown)
        out += "; and " + std::to_string(problems.size() - shown) + " more";
    return out.empty() ? "quick_check did not say ok" : out;
}

} // namespace loaderlens::recording_open
