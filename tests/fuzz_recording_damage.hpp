// SPDX-License-Identifier: MIT
// Damaged copies of a good, finished recording, for the fuzz suite: bytes (truncation, flips,
// pages) and SQL (dropped tables and columns, wrong types, extreme values, odd BLOBs, nested or
// huge JSON, hostile meta values and text, dangling references). The schema is learnt from the
// recording itself, so a new table or column is fuzzed without an edit here.
#pragma once

#include "fuzz_file_edit.hpp"
#include "fuzz_random.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace loaderlens::test {

class RecordingDamage {
  public:
    struct Column {
        std::string name, type; // declared type: INTEGER, TEXT, BLOB, REAL
    };
    struct Table {
        std::string name;
        std::vector<Column> columns;
        std::int64_t rows = 0;
    };

    explicit RecordingDamage(std::string good);

    // The kinds of damage a random case draws from (case i of a seed: kind i mod kinds()).
    static std::size_t kinds();
    // Writes the good recording damaged by `kind` (its parameters drawn from `random`) to
    // `target`; the reproducer's name for the good recording is `shown`.
    Damage make(std::size_t kind, FuzzRandom& random, const std::string& target) const;

    // The schema sweep: every table dropped, every column dropped, every meta value made "abc".
    std::size_t sweep_size() const;
    Damage make_sweep(std::size_t index, const std::string& target) const;

    const std::vector<Table>& tables() const { return tables_; }

  private:
    Damage truncate(FuzzRandom& random, const std::string& target) const;
    Damage flip(FuzzRandom& random, const std::string& target) const;
    Damage page(FuzzRandom& random, const std::string& target) const;
    Damage drop_table(const Table& table, const std::string& target) const;
    Damage drop_column(const Table& table, const Column& column, const std::string& target) const;
    Damage cell(FuzzRandom& random, const std::string& target, const std::string& wanted_type,
                const std::vector<std::string>& values, const std::string& what) const;
    Damage blob(FuzzRandom& random, const std::string& target) const;
    Damage json(FuzzRandom& random, const std::string& target) const;
    Damage meta_value(FuzzRandom& random, const std::string& target) const;
    Damage meta_key_gone(FuzzRandom& random, const std::string& target) const;
    Damage schema_version(FuzzRandom& random, const std::string& target) const;
    Damage text(FuzzRandom& random, const std::string& target) const;
    Damage references(FuzzRandom& random, const std::string& target) const;
    Damage rows(FuzzRandom& random, const std::string& target) const;
    Damage times(FuzzRandom& random, const std::string& target) const;

    // Copies the good recording to `target` and runs `sql` on it; a statement refused by a
    // constraint (NOT NULL, UNIQUE) is run again on `table` rebuilt without constraints.
    Damage with_sql(const std::string& target, const std::string& sql,
                    const std::string& description, const std::string& table = "") const;
    // " WHERE ..." choosing all rows, the first one or a random one of `table`.
    std::string some_rows(FuzzRandom& random, const Table& table) const;
    const Table* table(const std::string& name) const;

    std::string good_;
    std::vector<Table> tables_;
    std::vector<std::string> meta_keys_;
    std::string loader_config_; // meta loader.config of the good recording
    std::int64_t buckets_ = 256;
    std::uint64_t bytes_ = 0, page_size_ = 4096;
};

// What every reading command is, on one recording: the commands a damaged recording goes
// through (report, report --json, each export format; JSON export to the file `json_out`).
struct FuzzCommand;
std::vector<FuzzCommand> recording_commands(const std::string& recording,
                                            const std::string& json_out);

} // namespace loaderlens::test
