// SPDX-License-Identifier: MIT
// Values the command line accepts in more than one command: durations and sizes.
#include "commands.hpp"

#include <cctype>
#include <cmath>

namespace loaderlens::cli {

bool starts_like_a_number(const std::string& text) {
    // std::stod skips leading spaces and newlines: "\n5ms" would pass for 5 ms.
    return !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.');
}

std::optional<std::int64_t> parse_duration_us(const std::string& text) {
    if (!starts_like_a_number(text)) return std::nullopt;
    try {
        std::size_t used = 0;
        double value = std::stod(text, &used);
        const std::string unit = text.substr(used);
        if (unit == "s")
            value *= 1'000'000;
        else if (unit == "m" || unit == "min")
            value *= 60e6;
        else if (unit == "h")
            value *= 3600e6;
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

std::optional<std::int64_t> parse_size_or_zero(const std::string& text) {
    if (text == "0") return 0;
    return parse_size(text);
}

std::optional<std::int64_t> parse_size(const std::string& text) {
    struct Unit {
        const char* suffix;
        double factor;
    };
    static const Unit units[] = {
        {"", 1},         {"b", 1},      {"k", 0x1p10},   {"kib", 0x1p10}, {"m", 0x1p20},
        {"mib", 0x1p20}, {"g", 0x1p30}, {"gib", 0x1p30}, {"t", 0x1p40},   {"tib", 0x1p40},
        {"kb", 1e3},     {"mb", 1e6},   {"gb", 1e9},     {"tb", 1e12},
    };
    if (!starts_like_a_number(text)) return std::nullopt;
    try {
        std::size_t used = 0;
        const double number = std::stod(text, &used);
        std::string suffix = text.substr(used);
        for (char& c : suffix)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        for (const Unit& unit : units) {
            if (suffix != unit.suffix) continue;
            const double bytes = std::floor(number * unit.factor);
            // 2^62: far beyond any disk, and safe from overflow in count * record size.
            if (!std::isfinite(bytes) || bytes < 1 || bytes > 0x1p62) return std::nullopt;
            return static_cast<std::int64_t>(bytes);
        }
    } catch (const std::exception&) {
    }
    return std::nullopt;
}

std::optional<std::string> recording_name_problem(const std::string& file) {
    if (file.empty()) return "\"\": the recording's file name is empty";
    return std::nullopt;
}

} // namespace loaderlens::cli
