// SPDX-License-Identifier: MIT
#include "loaderlens/one_line.hpp"

namespace loaderlens {

namespace {

constexpr char hex[] = "0123456789abcdef";
constexpr std::string_view replacement = "\xef\xbf\xbd"; // U+FFFD

// The length of the well-formed UTF-8 sequence at `text[i]` (Unicode's table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 with `*bad` set to the bytes of its
// maximal ill-formed prefix: each such prefix becomes one U+FFFD, as nlohmann::json's dump and
// QString::fromUtf8 replace it, so that a name reads the same in every output.
std::size_t sequence_length(std::string_view text, std::size_t i, std::size_t* bad) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char lead = byte(0);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xbf; // the second byte's range
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        if (lead == 0xe0) low = 0xa0;
        if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        if (lead == 0xf0) low = 0x90;
        if (lead == 0xf4) high = 0x8f;
    } else {
        *bad = 1;
        return 0;
    }
    for (std::size_t k = 1; k < length; ++k) {
        const bool fits = i + k < text.size() && (k == 1 ? byte(k) >= low && byte(k) <= high
                                                         : byte(k) >= 0x80 && byte(k) <= 0xbf);
        if (!fits) {
            *bad = k;
            return 0;
        }
    }
    return length;
}

} // namespace

std::string one_line(std::string_view text) {
    std::string line;
    line.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c == '\n') {
                line += "\\n";
            } else if (c == '\t') {
                line += "\\t";
            } else if (c < 0x20 || c == 0x7f) {
                line += "\\x";
                line += hex[c >> 4];
                line += hex[c & 15];
            } else {
                line += text[i];
            }
            ++i;
            continue;
        }
        std::size_t bad = 0;
        const std::size_t length = sequence_length(text, i, &bad);
        if (length == 0) {
            line += replacement;
            i += bad;
        } else if (length == 2 && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
            // U+0080 to U+009F: C1 controls, which a UTF-8 terminal may obey (U+009B is CSI).
            const auto code = static_cast<unsigned char>(text[i + 1]);
            line += "\\u00";
            line += hex[code >> 4];
            line += hex[code & 15];
            i += length;
        } else {
            line.append(text, i, length);
            i += length;
        }
    }
    return line;
}

} // namespace loaderlens
