// SPDX-License-Identifier: MIT
// Damaged copies of a good LMDB environment, for the fuzz suite: data.mdb cut (an interrupted
// copy), its meta, branch, leaf and overflow pages flipped or zeroed, hostile meta fields (root,
// last page, map size), lock.mdb missing or garbage.
#pragma once

#include "fuzz_file_edit.hpp"
#include "fuzz_random.hpp"

#include <string>
#include <vector>

namespace loaderlens::test {

class LmdbDamage {
  public:
    // `good`: an environment directory written by `loaderlens mkdata lmdb`.
    explicit LmdbDamage(std::string good);

    static std::size_t kinds();
    // Writes the damaged environment as the directory `target`.
    Damage make(std::size_t kind, FuzzRandom& random, const std::string& target) const;

  private:
    // A page of the given LMDB page flag (P_BRANCH 1, P_LEAF 2, P_OVERFLOW 4), or any page.
    std::uint64_t page_of(FuzzRandom& random, unsigned flag) const;

    std::string good_;
    std::uint64_t bytes_ = 0, page_size_ = 4096;
    std::vector<unsigned> page_flags_; // by page number
};

} // namespace loaderlens::test
