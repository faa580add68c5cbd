#include "commands.hpp"

#include <cmath>

namespace loaderlens::cli {

std::optional<std::int64_t> parse_duration_us(const std::string& text) {
    try {
        std::size_t used = 0;
        double value = std::stod(text, &used);
        const std::string unit = text.substr(used);
        if (unit == "s")
            value *= 1'000'000;
        else if (unit == "ms" || unit.empty())
            value *= 1000;
        else if (unit != "us")
            return std::nullopt;
        // A day at most: beyond that (or inf, nan) it is a typo.
        if (!std::isfinite(value) || value < 0 || value > 86'400e6) return std::nullopt;
        return static_cast<std::int64_t>(value);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace loaderlens::cli
