// SPDX-License-Identifier: MIT
// How wide the text report may be and whether it is coloured: --width, else COLUMNS, else the
// terminal's width when standard output is one, else no limit (a file or a pipe gets the lines
// whole, for grep). Colour: --color always|never|auto; auto colours a terminal unless NO_COLOR is
// set (no-color.org) or TERM is dumb.
#pragma once

#include "loaderlens/text_layout.hpp"

#include <charconv>
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/ioctl.h>
#include <unistd.h>

namespace loaderlens::cli {

struct LayoutOptions {
    std::string color = "auto";
    int width = -1; // -1: not given
};

inline void add_layout_options(CLI::App* sub, LayoutOptions& o) {
    sub->add_option("--color", o.color,
                    "Colour the severities and headings: auto (a terminal, unless NO_COLOR is "
                    "set), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    sub->add_option("--width", o.width,
                    "Wrap lines to this many columns (0: never wrap); default: COLUMNS, else the "
                    "terminal's width, else no wrapping")
        ->check(CLI::Range(0, 100000));
}

inline std::size_t terminal_columns() {
    if (const char* columns = std::getenv("COLUMNS")) {
        const std::string_view text(columns);
        std::size_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc{} && end == text.data() + text.size() && value > 0) return value;
    }
    winsize size{};
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        return size.ws_col;
    return 0;
}

inline TextLayout terminal_layout(const LayoutOptions& o) {
    TextLayout layout;
    layout.width = o.width >= 0 ? static_cast<std::size_t>(o.width) : terminal_columns();
    if (o.color == "always") {
        layout.color = true;
    } else if (o.color == "auto") {
        const char* no_color = std::getenv("NO_COLOR");
        const char* term = std::getenv("TERM");
        layout.color = isatty(STDOUT_FILENO) && !(no_color && *no_color) &&
                       !(term && std::string_view(term) == "dumb");
    }
    return layout;
}

} // namespace loaderlens::cli
