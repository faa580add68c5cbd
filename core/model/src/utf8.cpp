// SPDX-License-Identifier: MIT
#include "loaderlens/utf8.hpp"

namespace loaderlens {

Utf8Step utf8_step(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char lead = byte(0);
    if (lead < 0x80) return {1, true};
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
        return {1, false};
    }
    for (std::size_t k = 1; k < length; ++k) {
        const unsigned char b = i + k < text.size() ? byte(k) : 0;
        const bool fits = k == 1 ? b >= low && b <= high : b >= 0x80 && b <= 0xbf;
        if (!fits) return {k, false};
    }
    return {length, true};
}

} // namespace loaderlens
