// SPDX-License-Identifier: MIT
// A thin RAII layer over the SQLite C API: only what the recorder and the reader need. It names
// SQLite's handle types by declaration only: SQLite's own header stays inside core/src.
#pragma once

#include "loaderlens/types.hpp"

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
// Error code (SQLITE_MISMATCH) of a value of the wrong type or shape for what reads it.
inline constexpr int error_mismatch = 20;

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
    // The getters take a value of the type asked for and nothing else: SQLite would turn text or
    // a BLOB into 0 and a NULL into 0, and a damaged file would read as plausible figures. They
    // throw Error (code SQLITE_MISMATCH) naming the column instead.
    std::int64_t int64(int column) const; // INTEGER
    Kib optional_int64(int column) const; // INTEGER, or NULL -> empty
    double real(int column) const;        // REAL or INTEGER
    std::string text(int column) const;   // anything; NULL -> ""
    bool is_null(int column) const;
    std::string_view blob(int column) const; // BLOB, or NULL -> empty; valid until the next step

  private:
    Statement& checked_bind(int rc, int index);
    [[noreturn]] void mismatch(int column, const char* expected) const;
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
    bool has_any_table(); // false for a database with no schema (yet)
    // The table's column names (PRAGMA table_info), in order; empty when there is no such table.
    std::vector<std::string> column_names(const std::string& table);
    std::int64_t last_insert_rowid() const;
    // Closing then neither checkpoints nor deletes FILE-wal and FILE-shm by name: for a database
    // whose name no longer leads to it, where those names may belong to someone else's file now.
    void keep_wal_on_close();

  private:
    sqlite3* db_ = nullptr;
};

} // namespace loaderlens::sql
