// SPDX-License-Identifier: MIT
// How text from outside that is not UTF-8 is read, the same in every output: each maximal
// ill-formed part becomes one U+FFFD (Unicode's "substitution of maximal subparts", as Python's
// decode, nlohmann::json's dump and QString::fromUtf8 do), so a name reads the same in the text
// report, report --json, the OpenMetrics export, check's JUnit file and the dashboard.
#pragma once

#include <cstddef>
#include <string_view>

namespace loaderlens {

inline constexpr std::string_view replacement_character = "\xef\xbf\xbd"; // U+FFFD

struct Utf8Step {
    std::size_t length = 1;  // bytes to consume (never 0 inside the text)
    bool well_formed = true; // false: those bytes are one U+FFFD
};

// The sequence at text[i] (i < text.size()): a well-formed one (Unicode's table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF; ASCII is one byte) or a maximal ill-formed part.
Utf8Step utf8_step(std::string_view text, std::size_t i);

} // namespace loaderlens
