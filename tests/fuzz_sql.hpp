// SPDX-License-Identifier: MIT
// SQLite for the fuzz generators: the test's own access to a recording through SQLite's C API
// (not core's reader, which is what is under test).
#pragma once

#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace loaderlens::test {

class SqlFile {
  public:
    SqlFile(const std::string& path, bool read_only);
    ~SqlFile();
    SqlFile(const SqlFile&) = delete;
    SqlFile& operator=(const SqlFile&) = delete;

    // Runs `sql` (one or more statements); SQLite's message when it refused.
    std::optional<std::string> exec(const std::string& sql);
    // The rows of a query, every column as text ("" for NULL); throws on an error.
    std::vector<std::vector<std::string>> rows(const std::string& sql);
    // The first column of each row.
    std::vector<std::string> strings(const std::string& sql);

  private:
    sqlite3* db_ = nullptr;
};

// 'text' with its quotes doubled.
std::string sql_quote(const std::string& text);
// `table` rebuilt as a copy of itself without constraints (NOT NULL, UNIQUE, PRIMARY KEY).
std::string rebuild_without_constraints(const std::string& table);
// A python3 line that runs `sql` with one bound parameter, the value of `python_value`.
std::string python_sql(const std::string& file, const std::string& sql,
                       const std::string& python_value);

} // namespace loaderlens::test
