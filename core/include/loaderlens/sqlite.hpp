// A thin RAII layer over the SQLite C API: only what the recorder and the reader need.
#pragma once

#include "loaderlens/types.hpp"

#include <sqlite3.h>
#include <stdexcept>
#include <string>
#include <string_view>

namespace loaderlens::sql {

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
    sqlite3_stmt* stmt_ = nullptr;
};

class Database {
  public:
    Database(const std::string& path, int flags);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    void exec(const std::string& sql);
    Statement prepare(const std::string& sql) { return Statement(db_, sql); }
    // Whether the schema has this table (a reader of older recordings asks before it queries).
    bool has_table(const std::string& name);
    sqlite3* handle() const { return db_; }

  private:
    sqlite3* db_ = nullptr;
};

} // namespace loaderlens::sql
