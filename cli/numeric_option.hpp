// SPDX-License-Identifier: MIT
// Whole-number options, parsed strictly: decimal digits (after a '-' where the range allows
// negatives) and nothing else, within the option's range, or a one-line error naming the option
// (exit 2). CLI11 2.1's own conversion would run with a value the user did not give: it wraps
// "-1" into 2^64-1 for an unsigned option, clamps an out-of-range number to the type's limit
// (2^63 becomes 2^63-1), reads "010" as octal 8 and "" as 0.
#pragma once

#include <charconv>
#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

namespace loaderlens::cli {

// The number `text` spells in decimal, if it is one within [min, max].
template <typename T> std::optional<T> parse_whole_number(const std::string& text, T min, T max) {
    T value{};
    const char* end = text.data() + text.size();
    auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end || value < min || value > max)
        return std::nullopt;
    return value;
}

// Registers `name` (e.g. "--batch" or "-n,--count") on `app`: its value must be a whole number
// from `min` to `max`; `assign` receives it.
template <typename T>
CLI::Option* add_whole_number_option(CLI::App* app, const std::string& name,
                                     std::function<void(T)> assign, T min, T max,
                                     const std::string& description) {
    const std::string flag = name.substr(name.rfind(',') + 1);
    const std::string expected =
        "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max);
    return app
        ->add_option_function<std::string>(
            name,
            [flag, expected, assign = std::move(assign), min, max](const std::string& text) {
                auto value = parse_whole_number<T>(text, min, max);
                if (!value) throw CLI::ValidationError(flag + " " + text, expected);
                assign(*value);
            },
            description + " (" + std::to_string(min) + " to " + std::to_string(max) + ")")
        ->type_name("INT");
}

// The same for a plain variable; its value before parsing is shown as the default.
template <typename T>
CLI::Option* add_whole_number_option(CLI::App* app, const std::string& name, T& target, T min,
                                     T max, const std::string& description) {
    return add_whole_number_option<T>(
               app, name, [&target](T value) { target = value; }, min, max, description)
        ->default_str(std::to_string(target));
}

// The same for an optional variable (no default).
template <typename T>
CLI::Option* add_whole_number_option(CLI::App* app, const std::string& name,
                                     std::optional<T>& target, T min, T max,
                                     const std::string& description) {
    return add_whole_number_option<T>(
        app, name, [&target](T value) { target = value; }, min, max, description);
}

// The number `text` spells in decimal (or exponent) notation, if it is finite and within [min,
// max] (`min_excluded`: above min). No space, sign "+", "inf" or "nan": CLI11 2.1 would skip a
// leading newline or space and take the rest.
inline std::optional<double> parse_real(const std::string& text, double min, double max,
                                        bool min_excluded) {
    double value = 0;
    const char* end = text.data() + text.size();
    auto [stop, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc() || stop != end || !std::isfinite(value) ||
        value < min || (min_excluded && value == min) || value > max)
        return std::nullopt;
    return value;
}

// Registers a real-valued option: finite, in [min, max] or (min, max]; `range` says which in the
// error line ("in (0, 1]").
inline CLI::Option* add_real_option(CLI::App* app, const std::string& name, double& target,
                                    double min, double max, bool min_excluded,
                                    const std::string& range, const std::string& description) {
    const std::string flag = name.substr(name.rfind(',') + 1);
    auto* option = app->add_option_function<std::string>(
        name,
        [flag, range, &target, min, max, min_excluded](const std::string& text) {
            auto value = parse_real(text, min, max, min_excluded);
            if (!value) throw CLI::ValidationError(flag + " " + text, "expected a number " + range);
            target = *value;
        },
        description + " (" + range + ")");
    option->type_name("NUMBER");
    std::ostringstream shown;
    shown << target;
    return option->default_str(shown.str());
}

} // namespace loaderlens::cli
