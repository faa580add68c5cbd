// SPDX-License-Identifier: MIT
// Byte-level damage for the fuzz suites: truncations, byte flips, whole pages zeroed or
// overwritten. Each returns what it did in words and as a shell line that does it again.
#pragma once

#include "fuzz_random.hpp"

#include <cstdint>
#include <string>

namespace loaderlens::test {

// What a generator did to a good input.
struct Damage {
    std::string description;
    std::string reproducer; // shell lines, on the base input's name
};

std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

// Each edits `path` in place; `shown` is the name the reproducer uses (e.g. good.db).
Damage truncate_to(const std::string& path, std::uint64_t size, const std::string& shown);
// `count` random bytes in [begin, end) xor'ed with a random non-zero value.
Damage flip_bytes(const std::string& path, FuzzRandom& random, int count, std::uint64_t begin,
                  std::uint64_t end, const std::string& shown);
// Page `page` (0-based, `page_size` bytes) zeroed, filled with random bytes, or 16 bytes of it
// flipped (the mode drawn from `random`).
Damage damage_page(const std::string& path, FuzzRandom& random, std::uint64_t page,
                   std::uint64_t page_size, const std::string& shown);
// Writes `bytes` at `offset`.
Damage overwrite(const std::string& path, std::uint64_t offset, const std::string& bytes,
                 const std::string& what, const std::string& shown);

// Random bytes, the same for the same generator state.
std::string random_bytes(FuzzRandom& random, std::size_t count);

// The low `bytes` bytes of `value`, least significant first (the .npy and LMDB header fields).
std::string little_endian(std::uint64_t value, int bytes);

} // namespace loaderlens::test
