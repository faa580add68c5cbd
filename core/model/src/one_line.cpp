// SPDX-License-Identifier: MIT
#include "loaderlens/one_line.hpp"

namespace loaderlens {

std::string one_line(std::string_view text) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string line;
    line.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\n') {
            line += "\\n";
        } else if (c == '\t') {
            line += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            line += "\\x";
            line += hex[c >> 4];
            line += hex[c & 15];
        } else {
            line += ch;
        }
    }
    return line;
}

} // namespace loaderlens
