// SPDX-License-Identifier: MIT
#include "loaderlens/one_line.hpp"

#include "loaderlens/utf8.hpp"

namespace loaderlens {

namespace {

constexpr char hex[] = "0123456789abcdef";

void append_escaped(std::string& line, const char* prefix, unsigned char code) {
    line += prefix;
    line += hex[code >> 4];
    line += hex[code & 15];
}

} // namespace

std::string one_line(std::string_view text) {
    std::string line;
    line.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const Utf8Step step = utf8_step(text, i);
        if (!step.well_formed) {
            line += replacement_character;
        } else if (c == '\n') {
            line += "\\n";
        } else if (c == '\t') {
            line += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            append_escaped(line, "\\x", c);
        } else if (c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
            // U+0080 to U+009F: C1 controls, which a UTF-8 terminal may obey (U+009B is CSI).
            append_escaped(line, "\\u00", static_cast<unsigned char>(text[i + 1]));
        } else {
            line.append(text, i, step.length);
        }
        i += step.length;
    }
    return line;
}

} // namespace loaderlens
