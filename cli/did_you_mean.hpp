// SPDX-License-Identifier: MIT
// "did you mean": the name closest to what was typed, for an unknown command or option.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loaderlens::cli {

// The name in `names` nearest to `typed` by edit distance (a swap of two neighbours counts
// one), if it is near enough to be a typo: at most 1 edit for names of up to 4 characters, 2 up
// to 8, 3 beyond. Ties go to the first in `names`.
std::optional<std::string> closest_name(const std::string& typed,
                                        const std::vector<std::string>& names);

} // namespace loaderlens::cli
