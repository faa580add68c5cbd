// SPDX-License-Identifier: MIT
// Damaged copies of a killed recording (its data still in FILE-wal, no FILE-shm: what a user
// copies after SLURM's OverMemoryKill), for the fuzz suite: the WAL cut, flipped or lost, the main
// file damaged under it, a stale -shm beside it, and the undamaged copy read from a read-only
// directory by another user.
#pragma once

#include "fuzz_file_edit.hpp"
#include "fuzz_random.hpp"

#include <string>

namespace loaderlens::test {

class WalDamage {
  public:
    // `db`: a recording whose recorder was killed; `db`-wal holds its uncheckpointed data.
    explicit WalDamage(std::string db);

    struct Made {
        Damage damage;
        bool control = false;   // nothing is wrong: every command must succeed
        bool as_nobody = false; // read by user nobody from a read-only directory
    };
    static std::size_t kinds();
    // Writes the killed recording, damaged by `kind`, as `dir`/`name` (+ "-wal", "-shm").
    Made make(std::size_t kind, FuzzRandom& random, const std::string& dir,
              const std::string& name) const;

  private:
    std::string db_, wal_;
    std::uint64_t wal_page_size_ = 4096;
};

} // namespace loaderlens::test
