// SPDX-License-Identifier: MIT
#include "loaderlens/page_sharing.hpp"

#include <array>
#include <bit>

namespace loaderlens {

std::vector<double> proportional_pages(const std::vector<const std::uint64_t*>& bitmaps,
                                       std::size_t words) {
    const std::size_t n = bitmaps.size();
    std::vector<double> shares(n, 0.0);
    std::vector<std::size_t> holders; // bitmaps with a page present in this word
    holders.reserve(n);
    for (std::size_t w = 0; w < words; ++w) {
        holders.clear();
        bool same = true;
        std::uint64_t first = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t word = bitmaps[i][w];
            if (word == 0) continue;
            if (holders.empty())
                first = word;
            else if (word != first)
                same = false;
            holders.push_back(i);
        }
        if (holders.empty()) continue;
        if (same) { // the common case: the holders have the same 64 pages
            const double share =
                static_cast<double>(std::popcount(first)) / static_cast<double>(holders.size());
            for (std::size_t i : holders)
                shares[i] += share;
            continue;
        }
        std::array<int, 64> count{};
        for (std::size_t i : holders)
            for (std::uint64_t word = bitmaps[i][w]; word != 0; word &= word - 1)
                ++count[static_cast<std::size_t>(std::countr_zero(word))];
        for (std::size_t i : holders)
            for (std::uint64_t word = bitmaps[i][w]; word != 0; word &= word - 1)
                shares[i] += 1.0 / count[static_cast<std::size_t>(std::countr_zero(word))];
    }
    return shares;
}

} // namespace loaderlens
