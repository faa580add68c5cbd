// SPDX-License-Identifier: MIT
// Reads a budget file (TOML, docs/check.md) into a Budget. Every problem is one line naming the
// file, the line and the key: an unknown key, a size or duration that is not one, a value of the
// wrong type, a finding kind or scheduler view that does not exist.
#pragma once

#include "loaderlens/budget.hpp"

#include <stdexcept>
#include <string>

namespace loaderlens::cli {

struct BudgetFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws BudgetFileError.
Budget read_budget_file(const std::string& path);

// "10%" or "12.5%" as a fraction (0.1); nothing for other text or a negative share.
std::optional<double> parse_percent(const std::string& text);

} // namespace loaderlens::cli
