// SPDX-License-Identifier: MIT
// Damaged HDF5 files for the fuzz suite (loaderlens issue 27, N7): bytes flipped anywhere, near
// the layout message or in the superblock; files cut; the chunk shape, the chunk index's address
// and the dataspace's dimensions patched where reading the good file back finds them; and files
// libhdf5 writes itself that no loader should read: virtual datasets (sourcing themselves, a
// missing file, another file), external raw storage (/dev/zero, /etc/shadow...), a filter
// libhdf5 does not carry.
#pragma once

#include "fuzz_file_edit.hpp"
#include "fuzz_random.hpp"

#include <string>
#include <vector>

namespace loaderlens::test {

class Hdf5Damage {
  public:
    // Writes its good files (64x4x8 unsigned bytes: chunked (16, 4, 8) plain and gzip in the
    // default file format, chunked in the newest, contiguous) in `dir`.
    explicit Hdf5Damage(const std::string& dir);

    static std::size_t kinds();
    // Writes the damaged file as `target`.
    Damage make(std::size_t kind, FuzzRandom& random, const std::string& target) const;

  private:
    struct Good {
        std::string path, bytes;
    };
    const Good& pick(FuzzRandom& random, bool default_format_chunked) const;

    std::vector<Good> good_; // chunked, gzip, latest, contiguous
};

} // namespace loaderlens::test
