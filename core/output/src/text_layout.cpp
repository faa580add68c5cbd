// SPDX-License-Identifier: MIT
#include "loaderlens/text_layout.hpp"

#include "loaderlens/utf8.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace loaderlens {

namespace {

constexpr std::string_view ellipsis = "…";

// Byte offsets of each code point's start, and the end.
std::vector<std::size_t> code_point_starts(std::string_view text) {
    std::vector<std::size_t> starts;
    for (std::size_t i = 0; i < text.size(); i += utf8_step(text, i).length)
        starts.push_back(i);
    starts.push_back(text.size());
    return starts;
}

// Where a wrapped line's continuation starts: under the text after the indent and a prefix that
// introduces an item ("- ", "-> ", "1. ", "[warning] ").
std::size_t hanging_indent(std::string_view line) {
    std::size_t i = line.find_first_not_of(' ');
    if (i == std::string_view::npos) return 0;
    const std::string_view rest = line.substr(i);
    for (std::string_view prefix : {"- ", "-> ", "* "})
        if (rest.starts_with(prefix)) return i + prefix.size();
    if (rest.starts_with('[')) {
        const auto close = rest.find("] ");
        if (close != std::string_view::npos && close < 12) return i + close + 2;
    }
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9')
        ++digits;
    if (digits > 0 && rest.substr(digits).starts_with(". ")) {
        const std::size_t after = i + digits + 2;
        // "1. [warning] title": under the title
        const std::string_view more = line.substr(after);
        const auto close = more.find("] ");
        if (more.starts_with('[') && close != std::string_view::npos && close < 12)
            return after + close + 2;
        return after;
    }
    return i + 2;
}

void wrap_line(std::string_view line, std::size_t width, std::string& out) {
    if (display_width(line) <= width) {
        out.append(line);
        out += '\n';
        return;
    }
    // A continuation indent that leaves less than half the width is pulled back.
    std::size_t indent = std::min(hanging_indent(line), width / 2);
    const std::vector<std::size_t> starts = code_point_starts(line);
    const std::size_t count = starts.size() - 1;
    std::size_t from = 0; // code point index where this output line's text starts
    bool first = true;
    while (from < count) {
        const std::size_t room = first ? width : width - indent;
        if (!first) {
            // Spaces at a break are dropped.
            while (from < count && line[starts[from]] == ' ')
                ++from;
            if (from == count) break;
        }
        std::size_t end = std::min(count, from + room);
        if (end < count) {
            // Break at the last space within the room (not in the leading indent).
            std::size_t space = end;
            const std::size_t floor = first ? line.find_first_not_of(' ') + 1 : from + 1;
            while (space > floor && line[starts[space]] != ' ')
                --space;
            if (space > floor) end = space;
        }
        if (!first) out.append(indent, ' ');
        std::string_view piece = line.substr(starts[from], starts[end] - starts[from]);
        while (!piece.empty() && piece.back() == ' ')
            piece.remove_suffix(1);
        out.append(piece);
        out += '\n';
        from = end;
        first = false;
    }
}

} // namespace

std::size_t display_width(std::string_view utf8) {
    std::size_t columns = 0;
    for (std::size_t i = 0; i < utf8.size(); i += utf8_step(utf8, i).length)
        ++columns;
    return columns;
}

std::string first_columns(std::string_view text, std::size_t columns) {
    std::size_t i = 0;
    for (std::size_t n = 0; i < text.size() && n < columns; ++n)
        i += utf8_step(text, i).length;
    return std::string(text.substr(0, i));
}

std::string abbreviate_middle(std::string_view text, std::size_t columns) {
    if (display_width(text) <= columns) return std::string(text);
    if (columns <= 1) return first_columns(ellipsis, columns);
    const std::vector<std::size_t> starts = code_point_starts(text);
    const std::size_t count = starts.size() - 1;
    // A path keeps its whole file name where it fits, and as much of its start as is left.
    std::size_t tail = (columns - 1) / 2;
    const auto slash = text.rfind('/');
    if (slash != std::string_view::npos) {
        const std::size_t name = display_width(text.substr(slash));
        if (name + 2 <= columns) tail = std::max(tail, name);
    }
    const std::size_t head = columns - 1 - tail;
    return std::string(text.substr(0, starts[head])) + std::string(ellipsis) +
           std::string(text.substr(starts[count - tail]));
}

std::string fit_to_width(std::string_view text, std::size_t width) {
    if (width == 0) return std::string(text);
    std::string out;
    out.reserve(text.size() + text.size() / 16);
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        const bool last = end == std::string_view::npos;
        if (last) end = text.size();
        wrap_line(text.substr(begin, end - begin), width, out);
        if (last) out.pop_back(); // the text had no final newline
        begin = end + 1;
    }
    return out;
}

std::string colorize_report(std::string_view text) {
    static constexpr std::string_view bold = "\x1b[1m", reset = "\x1b[0m";
    struct Mark {
        std::string_view tag, sgr;
    };
    static constexpr std::array<Mark, 3> severities{
        {{"[critical]", "\x1b[1;31m"}, {"[warning]", "\x1b[33m"}, {"[info]", "\x1b[36m"}}};
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string_view::npos) end = text.size();
        std::string line(text.substr(begin, end - begin));
        if (!line.empty() && line.front() != ' ') {
            line = std::string(bold) + line + std::string(reset);
        } else {
            for (const Mark& m : severities)
                if (const auto at = line.find(m.tag); at != std::string::npos) {
                    line.replace(at, m.tag.size(),
                                 std::string(m.sgr) + std::string(m.tag) + std::string(reset));
                    break;
                }
        }
        out += line;
        if (end < text.size()) out += '\n';
        begin = end + 1;
    }
    return out;
}

} // namespace loaderlens
