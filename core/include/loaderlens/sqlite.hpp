// SPDX-License-Identifier: MIT
// A thin RAII layer over the SQLite C API: only what the recorder and the reader need. It names
// SQLite's handle types by declaration only: SQLite's own header stays inside core/src.
#pragma once

#include "loaderlens/types.hpp"

#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

// Transitional: tests/test_recording.cpp still opens a database with SQLite's own flag names.
// These are SQLite's own definitions token for token (an identical redefinition is allowed);
// remove them once it uses sql::open_read_write | sql::open_create.
#ifndef SQLITE_OPEN_READWRITE
#define SQLITE_OPEN_READWRITE 0x00000002
#endif
#ifndef SQLITE_OPEN_CREATE
#define SQLITE_OPEN_CREATE 0x00000004
#endif

namespace loaderlens::sql {

// Flags for Database (SQLite's SQLITE_OPEN_* values; sqlite.cpp checks that they match).
inline constexpr int open_read_only = 0x01;
inline constexpr int open_read_write = 0x02;
inline constexpr int open_create = 0x04;
inline constexpr int open_uri = 0x40; // the path is a file: URI (?mode=ro&vfs=...)

struct Error : std::runtime_error {
    Error(const std::string& what, int sqlite_code) : std::runtime_error(what), code(sqlite_code) {}
    int code;
};

class Statement {
  public:
    Statement(sqlite3* db, const std::string& sql);
    ~Statement();
    Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    // Each bind throws Error when SQLite refuses it (index out of range, too big, no memory).
    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, const Kib& value); // empty -> NULL ("unavailable")
    Statement& bind(int index, double value);
    Statement& bind(int index, const std::string& value);
    Statement& bind_null(int index);
    Statement& bind_blob(int index, const void* data, std::size_t bytes); // copied by SQLite
    bool step(); // true while a row is available
    void run();  // step once, then reset for reuse
    void reset();
    std::int64_t int64(int column) const;
    Kib optional_int64(int column) const;
    double real(int column) const;
    std::string text(int column) const;
    bool is_null(int column) const;
    std::string_view blob(int column) const; // valid until the next step or reset

  private:
    Statement& checked_bind(int rc, int index);
    sqlite3_stmt* stmt_ = nullptr;
};

class Database {
  public:
    // `flags`: open_read_only, or open_read_write (| open_create); | open_uri for a file: URI.
    Database(const std::string& path, int flags);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    void exec(const std::string& sql);
    Statement prepare(const std::string& sql) { return Statement(db_, sql); }
    // Whether the schema has this table (a reader of older recordings asks before it queries).
    bool has_table(const std::string& name);
    std::int64_t last_insert_rowid() const;

  private:
    sqlite3* db_ = nullptr;
};

} // namespace loaderlens::sql
