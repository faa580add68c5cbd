// SPDX-License-Identifier: MIT
#include "loaderlens/units.hpp"

#include <fmt/format.h>

namespace loaderlens {

std::string format_kib(const Kib& kib, SizeStyle style) {
    if (!kib) return "n/a";
    const bool compact = style == SizeStyle::compact;
    const double value = static_cast<double>(*kib);
    if (value >= 1024.0 * 1024.0)
        return fmt::format("{:.2f}{}", value / (1024.0 * 1024.0), compact ? "G" : " GiB");
    if (value >= 1024.0) return fmt::format("{:.1f}{}", value / 1024.0, compact ? "M" : " MiB");
    return fmt::format("{}{}", *kib, compact ? "K" : " KiB");
}

std::string margin_text(const Kib& margin_kb) {
    if (!margin_kb) return "n/a";
    return *margin_kb < 0 ? "over by " + format_kib(saturating_sub(0, *margin_kb))
                          : format_kib(margin_kb) + " below the limit";
}

} // namespace loaderlens
