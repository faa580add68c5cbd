// SPDX-License-Identifier: MIT
// Text for a terminal: how wide a line is on screen, lines fitted to the terminal's width, long
// names shortened in the middle, and colour. The text report and its first screen use it; the
// CLI decides the width and whether to colour (COLUMNS, the tty, NO_COLOR, --color).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace loaderlens {

struct TextLayout {
    std::size_t width = 0; // columns; 0: no limit (the text as it was rendered)
    bool color = false;    // ANSI SGR colour for the severities and headings
};

struct ReportData;
// The text report laid out for a terminal (the one-argument form in report.hpp: no limit, no
// colour).
std::string render_report_text(const ReportData& report, const TextLayout& layout);

// Columns a line takes: one per code point (the report's Σ, ▁..█ and … are one column each).
std::size_t display_width(std::string_view utf8);

// The first `columns` columns of `text` (whole code points).
std::string first_columns(std::string_view text, std::size_t columns);

// `text` in at most `columns` columns, shortened in the middle with "…" where it is longer
// (a path keeps its start and its file name: /var/tmp/…/images.npy).
std::string abbreviate_middle(std::string_view text, std::size_t columns);

// Every line longer than `width` wrapped at spaces, its continuation indented under the text
// after the line's leading indent and any "- ", "-> " or "[severity] " prefix; a word longer
// than the room left is cut. Width 0 or a short text: unchanged.
std::string fit_to_width(std::string_view text, std::size_t width);

// The report's headings (a line that starts in column 0) in bold, severities in colour.
std::string colorize_report(std::string_view text);

} // namespace loaderlens
