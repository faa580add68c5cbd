// SPDX-License-Identifier: MIT
#include "fuzz_sql.hpp"

#include <sqlite3.h>
#include <stdexcept>

namespace loaderlens::test {

SqlFile::SqlFile(const std::string& path, bool read_only) {
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
        const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
        sqlite3_close(db_);
        throw std::runtime_error("fuzz: cannot open " + path + ": " + message);
    }
}

SqlFile::~SqlFile() {
    sqlite3_close(db_);
}

std::optional<std::string> SqlFile::exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return std::nullopt;
    std::string message = error ? error : "error";
    sqlite3_free(error);
    return message;
}

std::vector<std::vector<std::string>> SqlFile::rows(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK)
        throw std::runtime_error("fuzz: " + sql + ": " + sqlite3_errmsg(db_));
    std::vector<std::vector<std::string>> result;
    int rc;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
        std::vector<std::string> row;
        for (int i = 0; i < sqlite3_column_count(statement); ++i) {
            const auto* text = sqlite3_column_text(statement, i);
            row.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
        }
        result.push_back(std::move(row));
    }
    sqlite3_finalize(statement);
    if (rc != SQLITE_DONE) throw std::runtime_error("fuzz: " + sql + ": " + sqlite3_errmsg(db_));
    return result;
}

std::vector<std::string> SqlFile::strings(const std::string& sql) {
    std::vector<std::string> result;
    for (auto& row : rows(sql))
        result.push_back(row.empty() ? "" : row.front());
    return result;
}

std::string sql_quote(const std::string& text) {
    std::string quoted = "'";
    for (char ch : text) {
        if (ch == '\'') quoted += '\'';
        quoted += ch;
    }
    return quoted + "'";
}

std::string rebuild_without_constraints(const std::string& table) {
    const std::string name = "\"" + table + "\"";
    return "CREATE TABLE fuzz_plain AS SELECT * FROM " + name + "; DROP TABLE " + name +
           "; ALTER TABLE fuzz_plain RENAME TO " + name + "; ";
}

std::string python_sql(const std::string& file, const std::string& sql,
                       const std::string& python_value) {
    return "python3 -c \"import sqlite3; c = sqlite3.connect('" + file + "'); c.execute(\\\"" +
           sql + "\\\", (" + python_value + ",)); c.commit()\"";
}

} // namespace loaderlens::test
