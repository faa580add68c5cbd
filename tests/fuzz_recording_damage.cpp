// SPDX-License-Identifier: MIT
#include "fuzz_recording_damage.hpp"

#include "fuzz_runner.hpp"
#include "fuzz_sql.hpp"
#include "fuzz_values.hpp"
#include "support.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace loaderlens::test {

namespace fs = std::filesystem;

RecordingDamage::RecordingDamage(std::string good) : good_(std::move(good)) {
    SqlFile db(good_, true);
    for (const auto& name :
         db.strings("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                    "'sqlite_%' ORDER BY name")) {
        Table table{name, {}, 0};
        for (const auto& row :
             db.rows("SELECT name, type FROM pragma_table_info(" + sql_quote(name) + ")"))
            table.columns.push_back({row.at(0), row.at(1)});
        table.rows = std::stoll(db.strings("SELECT count(*) FROM \"" + name + "\"").at(0));
        tables_.push_back(table);
    }
    meta_keys_ = db.strings("SELECT key FROM meta ORDER BY key");
    const auto config = db.strings("SELECT value FROM meta WHERE key = 'loader.config'");
    if (!config.empty()) loader_config_ = config.front();
    if (table("residency_files")) {
        const auto most = db.strings("SELECT max(buckets) FROM residency_files");
        if (!most.empty() && !most.front().empty()) buckets_ = std::stoll(most.front());
    }
    page_size_ = static_cast<std::uint64_t>(std::stoll(db.strings("PRAGMA page_size").at(0)));
    bytes_ = fs::file_size(good_);
}

const RecordingDamage::Table* RecordingDamage::table(const std::string& name) const {
    for (const auto& t : tables_)
        if (t.name == name) return &t;
    return nullptr;
}

std::size_t RecordingDamage::kinds() {
    return 16;
}

Damage RecordingDamage::make(std::size_t kind, FuzzRandom& random,
                             const std::string& target) const {
    switch (kind % kinds()) {
    case 0:
        return truncate(random, target);
    case 1:
        return flip(random, target);
    case 2:
        return page(random, target);
    case 3:
        return drop_table(random.pick(tables_), target);
    case 4: {
        const Table& t = random.pick(tables_);
        return drop_column(t, random.pick(t.columns), target);
    }
    case 5:
        return cell(random, target, "", {}, "a value of the wrong type");
    case 6:
        return cell(random, target, "INTEGER", extreme_integers(), "an extreme integer");
    case 7:
        return blob(random, target);
    case 8:
        return json(random, target);
    case 9:
        return meta_value(random, target);
    case 10:
        return meta_key_gone(random, target);
    case 11:
        return schema_version(random, target);
    case 12:
        return text(random, target);
    case 13:
        return references(random, target);
    case 14:
        return rows(random, target);
    default:
        return times(random, target);
    }
}

std::size_t RecordingDamage::sweep_size() const {
    std::size_t columns = 0;
    for (const auto& t : tables_)
        columns += t.columns.size();
    return tables_.size() + columns + meta_keys_.size();
}

Damage RecordingDamage::make_sweep(std::size_t index, const std::string& target) const {
    if (index < tables_.size()) return drop_table(tables_[index], target);
    index -= tables_.size();
    for (const auto& t : tables_) {
        if (index < t.columns.size()) return drop_column(t, t.columns[index], target);
        index -= t.columns.size();
    }
    const std::string& key = meta_keys_.at(index);
    return with_sql(target, "UPDATE meta SET value = 'abc' WHERE key = " + sql_quote(key),
                    "meta " + key + " = 'abc'");
}

Damage RecordingDamage::with_sql(const std::string& target, const std::string& sql,
                                 const std::string& description, const std::string& table) const {
    fs::copy_file(good_, target, fs::copy_options::overwrite_existing);
    std::string done = sql;
    {
        SqlFile db(target, false);
        if (auto refused = db.exec("BEGIN; " + sql + "; COMMIT;")) {
            db.exec("ROLLBACK;");
            // A NOT NULL, UNIQUE or PRIMARY KEY constraint said no: the same table without them.
            done = rebuild_without_constraints(table) + sql;
            if (table.empty() || db.exec("BEGIN; " + done + "; COMMIT;"))
                throw std::runtime_error("fuzz: SQLite refused " + shortened(sql, 300) + ": " +
                                         *refused);
        }
    }
    return {description, "sqlite3 good.db " + shell_quote(shortened(done, 400))};
}

std::string RecordingDamage::some_rows(FuzzRandom& random, const Table& t) const {
    const std::string name = "\"" + t.name + "\"";
    switch (random.below(3)) {
    case 0:
        return "";
    case 1:
        return " WHERE rowid = (SELECT min(rowid) FROM " + name + ")";
    default:
        return " WHERE rowid = (SELECT rowid FROM " + name + " ORDER BY rowid LIMIT 1 OFFSET " +
               std::to_string(
                   random.below(static_cast<std::uint64_t>(std::max<std::int64_t>(t.rows, 1)))) +
               ")";
    }
}

Damage RecordingDamage::truncate(FuzzRandom& random, const std::string& target) const {
    fs::copy_file(good_, target, fs::copy_options::overwrite_existing);
    const std::uint64_t pages = bytes_ / page_size_;
    std::uint64_t size = 0;
    switch (random.below(4)) {
    case 0:
        size = page_size_ * random.below(pages);
        break;
    case 1:
        size = random.below(100);
        break;
    case 2:
        size = random.below(bytes_);
        break;
    default:
        size = bytes_ - 1 - random.below(page_size_);
        break;
    }
    return truncate_to(target, size, "good.db");
}

Damage RecordingDamage::flip(FuzzRandom& random, const std::string& target) const {
    fs::copy_file(good_, target, fs::copy_options::overwrite_existing);
    const int count = static_cast<int>(random.between(1, 8));
    switch (random.below(3)) {
    case 0:
        return flip_bytes(target, random, count, 0, 100, "good.db"); // the header
    case 1:
        return flip_bytes(target, random, count, 0, page_size_, "good.db"); // the schema
    default:
        return flip_bytes(target, random, count, 0, bytes_, "good.db");
    }
}

Damage RecordingDamage::page(FuzzRandom& random, const std::string& target) const {
    fs::copy_file(good_, target, fs::copy_options::overwrite_existing);
    const std::uint64_t pages = bytes_ / page_size_;
    const std::uint64_t page = random.percent(20) ? 0 : random.below(pages);
    return damage_page(target, random, page, page_size_, "good.db");
}

Damage RecordingDamage::drop_table(const Table& t, const std::string& target) const {
    return with_sql(target, "DROP TABLE \"" + t.name + "\";", "table " + t.name + " dropped");
}

Damage RecordingDamage::drop_column(const Table& t, const Column& column,
                                    const std::string& target) const {
    std::string kept;
    for (const auto& c : t.columns)
        if (c.name != column.name) kept += (kept.empty() ? "" : ", ") + ("\"" + c.name + "\"");
    if (kept.empty()) kept = "NULL AS nothing";
    const std::string sql = "CREATE TABLE fuzz_rebuilt AS SELECT " + kept + " FROM \"" + t.name +
                            "\"; DROP TABLE \"" + t.name + "\"; ALTER TABLE fuzz_rebuilt " +
                            "RENAME TO \"" + t.name + "\";";
    return with_sql(target, sql,
                    "column " + t.name + "." + column.name + " dropped (table rebuilt without it)");
}

Damage RecordingDamage::cell(FuzzRandom& random, const std::string& target,
                             const std::string& wanted_type, const std::vector<std::string>& values,
                             const std::string& what) const {
    std::vector<std::pair<const Table*, const Column*>> cells;
    for (const auto& t : tables_)
        for (const auto& c : t.columns)
            if (t.rows > 0 && (wanted_type.empty() || c.type == wanted_type))
                cells.emplace_back(&t, &c);
    const auto [t, c] = random.pick(cells);
    const std::string value =
        values.empty() ? random.pick(wrong_type_values(c->type)) : random.pick(values);
    const std::string where = some_rows(random, *t);
    return with_sql(target,
                    "UPDATE \"" + t->name + "\" SET \"" + c->name + "\" = " + value + where + ";",
                    t->name + "." + c->name + " = " + shortened(value, 80) + " (" + what +
                        (where.empty() ? ", every row)" : ", one row)"),
                    t->name);
}

Damage RecordingDamage::blob(FuzzRandom& random, const std::string& target) const {
    std::vector<std::pair<const Table*, const Column*>> cells;
    for (const auto& t : tables_)
        for (const auto& c : t.columns)
            if (t.rows > 0 && c.type == "BLOB") cells.emplace_back(&t, &c);
    if (cells.empty()) return cell(random, target, "", {}, "a value of the wrong type");
    const auto [t, c] = random.pick(cells);
    const std::string value = random.pick(blob_values(random, buckets_));
    const std::string where = some_rows(random, *t);
    return with_sql(target,
                    "UPDATE \"" + t->name + "\" SET \"" + c->name + "\" = " + value + where + ";",
                    t->name + "." + c->name + " = " + shortened(value, 80) +
                        (where.empty() ? " (every row)" : " (one row)"),
                    t->name);
}

Damage RecordingDamage::json(FuzzRandom& random, const std::string& target) const {
    const Table* progress = table("loader_progress");
    const bool workers = progress && progress->rows > 0 && random.percent(30);
    const JsonValue value =
        workers ? random_workers_json(random) : random_config_json(random, loader_config_);
    const std::string sql =
        workers
            ? "UPDATE loader_progress SET workers = " + sql_quote(value.text) +
                  some_rows(random, *progress) + ";"
            : "UPDATE meta SET value = " + sql_quote(value.text) + " WHERE key = 'loader.config';";
    Damage damage = with_sql(target, sql,
                             (workers ? "loader_progress.workers = " : "meta loader.config = ") +
                                 value.description,
                             workers ? "loader_progress" : "meta");
    damage.reproducer = python_sql("good.db",
                                   workers ? "UPDATE loader_progress SET workers = ?"
                                           : "UPDATE meta SET value = ? WHERE key = "
                                             "'loader.config'",
                                   value.python);
    return damage;
}

Damage RecordingDamage::meta_value(FuzzRandom& random, const std::string& target) const {
    const std::string& key = random.pick(meta_keys_);
    const std::string value = random.pick(meta_values());
    return with_sql(target, "UPDATE meta SET value = " + value + " WHERE key = " + sql_quote(key),
                    "meta " + key + " = " + shortened(value, 80), "meta");
}

Damage RecordingDamage::meta_key_gone(FuzzRandom& random, const std::string& target) const {
    const std::string& key = random.pick(meta_keys_);
    return with_sql(target, "DELETE FROM meta WHERE key = " + sql_quote(key),
                    "meta " + key + " deleted");
}

Damage RecordingDamage::schema_version(FuzzRandom& random, const std::string& target) const {
    const std::string version =
        random.pick<std::string>({"0", "1", "2", "4", "99", "-1", "2147483647", "-2147483648"});
    return with_sql(target, "PRAGMA user_version = " + version,
                    "schema version (user_version) " + version);
}

Damage RecordingDamage::text(FuzzRandom& random, const std::string& target) const {
    return cell(random, target, "TEXT", hostile_texts(), "hostile text");
}

Damage RecordingDamage::references(FuzzRandom& random, const std::string& target) const {
    const Table* processes = table("processes");
    if (processes && processes->rows >= 2 && random.percent(25)) {
        // A cycle in the tree: a walk up the parents must not go round forever.
        const bool self = random.percent(50);
        const std::string sql =
            self ? "UPDATE processes SET parent_id = id;"
                 : "UPDATE processes SET parent_id = (SELECT max(id) FROM processes) WHERE id = "
                   "(SELECT min(id) FROM processes); UPDATE processes SET parent_id = (SELECT "
                   "min(id) FROM processes) WHERE id = (SELECT max(id) FROM processes);";
        return with_sql(target, sql,
                        self ? "every process is its own parent"
                             : "two processes parent each other");
    }
    std::vector<std::pair<const Table*, const Column*>> cells;
    for (const auto& t : tables_)
        for (const auto& c : t.columns)
            if (t.rows > 0 && (c.name.ends_with("_id") || c.name == "id" || c.name == "worker" ||
                               c.name == "slot" || c.name == "generation"))
                cells.emplace_back(&t, &c);
    const auto [t, c] = random.pick(cells);
    const std::string value =
        random.pick<std::string>({"999999", "-1", "0", "9223372036854775807", "NULL"});
    const std::string where = some_rows(random, *t);
    return with_sql(target,
                    "UPDATE \"" + t->name + "\" SET \"" + c->name + "\" = " + value + where + ";",
                    t->name + "." + c->name + " = " + value + " (a reference to nothing)", t->name);
}

Damage RecordingDamage::rows(FuzzRandom& random, const std::string& target) const {
    const Table& t = random.pick(tables_);
    const std::string name = "\"" + t.name + "\"";
    switch (random.below(3)) {
    case 0:
        return with_sql(target, "DELETE FROM " + name, "every row of " + t.name + " deleted");
    case 1:
        return with_sql(target, "DELETE FROM " + name + " WHERE rowid % 2 = 0",
                        "every other row of " + t.name + " deleted");
    default:
        return with_sql(target, "INSERT INTO " + name + " SELECT * FROM " + name,
                        "every row of " + t.name + " twice", t.name);
    }
}

Damage RecordingDamage::times(FuzzRandom& random, const std::string& target) const {
    std::vector<std::pair<const Table*, const Column*>> cells;
    for (const auto& t : tables_)
        for (const auto& c : t.columns)
            if (t.rows > 0 && (c.name == "t_ms" || c.name.ends_with("_ms")))
                cells.emplace_back(&t, &c);
    const auto [t, c] = random.pick(cells);
    const std::string column = "\"" + c->name + "\"";
    const std::string value = random.pick<std::string>(
        {"-" + column, "9223372036854775807 - " + column, "0", "-9223372036854775808",
         "9223372036854775807",
         "(SELECT max(" + column + ") FROM \"" + t->name + "\") - " + column});
    return with_sql(target, "UPDATE \"" + t->name + "\" SET " + column + " = " + value + ";",
                    t->name + "." + c->name + " = " + value + " (times out of order)", t->name);
}

std::vector<FuzzCommand> recording_commands(const std::string& recording,
                                            const std::string& json_out) {
    const std::string cli = fuzz_cli();
    std::vector<FuzzCommand> commands(5);
    commands[0].argv = {cli, "report", recording};
    commands[0].output = FuzzOutput::text;
    commands[1].argv = {cli, "report", "--json", recording};
    commands[1].output = FuzzOutput::json;
    commands[2].argv = {cli, "export", recording};
    commands[2].output = FuzzOutput::csv;
    commands[3].argv = {cli, "export", "--format", "json", "-o", json_out, recording};
    commands[3].output = FuzzOutput::json_file;
    commands[3].output_file = json_out;
    commands[3].names = {recording, json_out};
    commands[4].argv = {cli, "export", "--format", "residency-csv", recording};
    commands[4].output = FuzzOutput::csv;
    for (auto& command : commands)
        if (command.names.empty()) command.names = {recording};
    return commands;
}

} // namespace loaderlens::test
