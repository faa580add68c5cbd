// SPDX-License-Identifier: MIT
#include "did_you_mean.hpp"

#include <algorithm>

namespace loaderlens::cli {

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions, and a swap of two
// neighbouring characters (`reprot`) as one edit.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

} // namespace

std::optional<std::string> closest_name(const std::string& typed,
                                        const std::vector<std::string>& names) {
    // A typo is short: whatever is longer than any name by far is not one (and the table stays
    // small for a hostile argument).
    if (typed.empty() || typed.size() > 64) return std::nullopt;
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    for (const std::string& name : names) {
        const std::size_t length = std::max(typed.size(), name.size());
        const std::size_t allowed = length <= 4 ? 1 : length <= 8 ? 2 : 3;
        const std::size_t distance = edit_distance(typed, name);
        if (distance <= allowed && (!best || distance < best_distance)) {
            best = name;
            best_distance = distance;
        }
    }
    return best;
}

} // namespace loaderlens::cli
