// SPDX-License-Identifier: MIT
// splitmix64 (Steele, Lea and Flood, 2014), shared by the access patterns, the dataset content and
// the worker seeds: tiny, fast, and specified bit for bit, so sequences are the same everywhere.
#pragma once

#include <cstdint>

namespace loaderlens::probes::splitmix {

// The stream's increment (2^64 / golden ratio).
inline constexpr std::uint64_t gamma = 0x9e3779b97f4a7c15ULL;

// The output function: a bijection of 64-bit words with good avalanche.
constexpr std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

} // namespace loaderlens::probes::splitmix
