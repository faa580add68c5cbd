// SPDX-License-Identifier: MIT
// Damaged copies of a good .npy file, for the fuzz suite: header bytes flipped, the file cut in its
// header or its data, the header rewritten with a hostile shape, dtype, fortran_order or key set,
// a hostile header length, version or magic, bytes appended.
#pragma once

#include "fuzz_file_edit.hpp"
#include "fuzz_random.hpp"

#include <string>

namespace loaderlens::test {

class NpyDamage {
  public:
    // `good`: a .npy file written by `loaderlens mkdata npy` (its header is read from it).
    explicit NpyDamage(std::string good);

    static std::size_t kinds();
    Damage make(std::size_t kind, FuzzRandom& random, const std::string& target) const;

  private:
    // The file with its header replaced by `dict` (format `major`), the data kept.
    Damage with_header(const std::string& dict, int major, const std::string& target,
                       const std::string& what) const;

    std::string good_, bytes_, dict_;
    std::size_t data_offset_ = 0;
};

} // namespace loaderlens::test
