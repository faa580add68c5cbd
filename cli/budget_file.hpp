// SPDX-License-Identifier: MIT
// Reads a budget file (TOML, docs/check.md) into a Budget. Every problem is one line naming the
// file, the line and the key: an unknown key, a size or duration that is not one, a value of the
// wrong type, a finding kind or scheduler view that does not exist.
#pragma once

#include "loaderlens/budget.hpp"

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

namespace loaderlens::cli {

struct BudgetFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Refused before toml++ reads them (docs/check.md, "Limits"): a file larger than this, and
// nesting deeper than this (table headers, dotted keys, arrays and inline tables, summed).
inline constexpr std::size_t max_budget_bytes = 1 << 20;
inline constexpr int max_budget_nesting = 16;

// Throws BudgetFileError.
Budget read_budget_file(const std::string& path);

// "10%" or "12.5%" as a fraction (0.1); nothing for other text or a negative share.
std::optional<double> parse_percent(const std::string& text);

} // namespace loaderlens::cli
