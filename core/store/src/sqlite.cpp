// SPDX-License-Identifier: MIT
#include "loaderlens/sqlite.hpp"

#include <cctype>
#include <sqlite3.h>

namespace loaderlens::sql {

static_assert(open_read_only == SQLITE_OPEN_READONLY && open_read_write == SQLITE_OPEN_READWRITE &&
              open_create == SQLITE_OPEN_CREATE && open_uri == SQLITE_OPEN_URI &&
              error_mismatch == SQLITE_MISMATCH);

namespace {
void check(sqlite3* db, int rc, const char* what) {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        throw Error(std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)), rc);
}
} // namespace

Statement::Statement(sqlite3* db, const std::string& sql) {
    check(db, sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr),
          "prepare");
}
Statement::~Statement() {
    sqlite3_finalize(stmt_);
}

Statement& Statement::checked_bind(int rc, int index) {
    if (rc != SQLITE_OK) {
        sqlite3* db = sqlite3_db_handle(stmt_);
        const char* sql = sqlite3_sql(stmt_);
        throw Error("bind parameter " + std::to_string(index) + " of \"" + (sql ? sql : "") +
                        "\": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)),
                    rc);
    }
    return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
    return checked_bind(sqlite3_bind_int64(stmt_, index, value), index);
}
Statement& Statement::bind(int index, const Kib& value) {
    return value ? bind(index, *value) : bind_null(index);
}
Statement& Statement::bind(int index, double value) {
    return checked_bind(sqlite3_bind_double(stmt_, index, value), index);
}
Statement& Statement::bind(int index, const std::string& value) {
    return checked_bind(sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                                            SQLITE_TRANSIENT, SQLITE_UTF8),
                        index);
}
Statement& Statement::bind_null(int index) {
    return checked_bind(sqlite3_bind_null(stmt_, index), index);
}
Statement& Statement::bind_blob(int index, const void* data, std::size_t bytes) {
    return checked_bind(sqlite3_bind_blob64(stmt_, index, data, bytes, SQLITE_TRANSIENT), index);
}
bool Statement::step() {
    int rc = sqlite3_step(stmt_);
    check(sqlite3_db_handle(stmt_), rc, "step");
    return rc == SQLITE_ROW;
}
void Statement::run() {
    step();
    reset();
}
void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}
void Statement::mismatch(int column, const char* expected) const {
    const char* name = sqlite3_column_name(stmt_, column);
    std::string where = name ? name : "column " + std::to_string(column);
    // The table, from the statement's text (sqlite3_column_table_name needs a build option).
    const std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
    if (const auto from = sql.find(" FROM ");
        from != std::string::npos && std::isalpha(static_cast<unsigned char>(sql[from + 6]))) {
        const auto start = from + 6, end = sql.find_first_of(" ;)", start);
        where = sql.substr(start, end == std::string::npos ? end : end - start) + "." + where;
    }
    const char* found = "?";
    switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER:
        found = "an integer";
        break;
    case SQLITE_FLOAT:
        found = "a real number";
        break;
    case SQLITE_TEXT:
        found = "text";
        break;
    case SQLITE_BLOB:
        found = "a BLOB";
        break;
    case SQLITE_NULL:
        found = "NULL";
        break;
    }
    throw Error(where + " holds " + found + " where " + expected + " belongs", SQLITE_MISMATCH);
}

std::int64_t Statement::int64(int column) const {
    if (sqlite3_column_type(stmt_, column) != SQLITE_INTEGER) mismatch(column, "an integer");
    return sqlite3_column_int64(stmt_, column);
}
Kib Statement::optional_int64(int column) const {
    const int type = sqlite3_column_type(stmt_, column);
    if (type == SQLITE_NULL) return std::nullopt;
    if (type != SQLITE_INTEGER) mismatch(column, "an integer or NULL");
    return sqlite3_column_int64(stmt_, column);
}
double Statement::real(int column) const {
    const int type = sqlite3_column_type(stmt_, column);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) mismatch(column, "a number");
    return sqlite3_column_double(stmt_, column);
}
std::string Statement::text(int column) const {
    const auto* chars = sqlite3_column_text(stmt_, column);
    return chars ? reinterpret_cast<const char*>(chars) : "";
}

bool Statement::is_null(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::string_view Statement::blob(int column) const {
    const int type = sqlite3_column_type(stmt_, column);
    if (type == SQLITE_NULL) return {};
    if (type != SQLITE_BLOB) mismatch(column, "a BLOB or NULL");
    const void* data = sqlite3_column_blob(stmt_, column);
    const int bytes = sqlite3_column_bytes(stmt_, column);
    return data ? std::string_view(static_cast<const char*>(data), static_cast<std::size_t>(bytes))
                : std::string_view{};
}

Database::Database(const std::string& path, int flags) {
    // NOMUTEX: a connection is used by one thread at a time (the recorder's; a reader's), so
    // SQLite's lock around every call is pure cost (some 8% of a full read, bench/ reading).
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error(message, rc);
    }
    sqlite3_busy_timeout(db_, 2000);
    // A reader must leave a recording's files as they are. The last connection to a WAL database
    // checkpoints on close and then deletes FILE-wal; read-only, it cannot copy frames, but a -wal
    // without a usable frame (truncated, damaged) was deleted all the same.
    if (flags & open_read_only) {
        const int rc_config = sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
        if (rc_config != SQLITE_OK) {
            sqlite3_close(db_);
            db_ = nullptr;
            throw Error("cannot keep the -wal of a read-only connection", rc_config);
        }
    }
}
Database::~Database() {
    sqlite3_close(db_);
}

std::int64_t Database::last_insert_rowid() const {
    return sqlite3_last_insert_rowid(db_);
}

void Database::keep_wal_on_close() {
    const int rc = sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    if (rc != SQLITE_OK) throw Error("cannot keep the -wal on close", rc);
}

bool Database::has_table(const std::string& name) {
    auto q = prepare("SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?");
    q.bind(1, name);
    q.step();
    return q.int64(0) > 0;
}

bool Database::has_any_table() {
    auto q = prepare("SELECT count(*) FROM sqlite_master WHERE type='table'");
    q.step();
    return q.int64(0) > 0;
}

std::vector<std::string> Database::column_names(const std::string& table) {
    std::vector<std::string> out;
    auto q = prepare("SELECT name FROM pragma_table_info(?)");
    q.bind(1, table);
    while (q.step())
        out.push_back(q.text(0));
    return out;
}

void Database::exec(const std::string& sql) {
    char* message = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    if (rc != SQLITE_OK) {
        std::string text = message ? message : sqlite3_errstr(rc);
        sqlite3_free(message);
        throw Error(text, rc);
    }
}

} // namespace loaderlens::sql
