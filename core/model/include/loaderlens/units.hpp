// SPDX-License-Identifier: MIT
// How sizes are written for people, in one place for the report, the CLI and the GUI.
#pragma once

#include "loaderlens/types.hpp"

#include <string>

namespace loaderlens {

enum class SizeStyle {
    spaced,  // "1.20 GiB", "420.0 MiB", "204 KiB"
    compact, // "1.20G", "420.0M", "204K", as top prints them, for wide tables
};

// "n/a" for an unavailable figure, never 0.
std::string format_kib(const Kib& kib, SizeStyle style = SizeStyle::spaced);
// A margin to a limit as words: "81.5 MiB below the limit" or "over by 81.5 MiB".
std::string margin_text(const Kib& margin_kb);

} // namespace loaderlens
