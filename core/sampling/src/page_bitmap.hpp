// SPDX-License-Identifier: MIT
// Bitmaps of a file's pages (one bit per page), as the residency tier fills them from pagemap.
#pragma once

#include "loaderlens/residency.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace loaderlens {

// Bits [first, last) of a page bitmap.
inline void set_bits(std::vector<std::uint64_t>& bits, std::int64_t first, std::int64_t last) {
    for (std::int64_t page = first; page < last;) {
        const auto word = static_cast<std::size_t>(page / 64);
        const int bit = static_cast<int>(page % 64);
        const std::int64_t span = std::min<std::int64_t>(64 - bit, last - page);
        const std::uint64_t mask = span == 64 ? ~0ULL : ((1ULL << span) - 1) << bit;
        bits[word] |= mask;
        page += span;
    }
}

inline std::int64_t count_bits(const std::vector<std::uint64_t>& bits, std::int64_t first,
                               std::int64_t last) {
    std::int64_t count = 0;
    for (std::int64_t page = first; page < last;) {
        const auto word = static_cast<std::size_t>(page / 64);
        const int bit = static_cast<int>(page % 64);
        const std::int64_t span = std::min<std::int64_t>(64 - bit, last - page);
        const std::uint64_t mask = span == 64 ? ~0ULL : ((1ULL << span) - 1) << bit;
        count += std::popcount(bits[word] & mask);
        page += span;
    }
    return count;
}

// Set bits per bucket of `layout`.
inline BucketCounts bucket_counts(const std::vector<std::uint64_t>& bits,
                                  const BucketLayout& layout) {
    BucketCounts out(static_cast<std::size_t>(layout.count), 0);
    for (int b = 0; b < layout.count; ++b) {
        const std::int64_t first = layout.first_page(b);
        out[static_cast<std::size_t>(b)] =
            static_cast<std::int32_t>(count_bits(bits, first, first + layout.pages_in(b)));
    }
    return out;
}

} // namespace loaderlens
