// SPDX-License-Identifier: MIT
// "--" ends loaderlens's own options: everything after the first one belongs to the wrapped
// command (`record`) or is the subcommand's positional argument (a dataset, a recording), even
// where it looks like an option (`-c`, `-o`, `--force`, `-weird.npy`). CLI11 on its own ends only
// a multi-value option's values at "--" and goes on parsing the command's flags as ours.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace loaderlens::cli {

struct DashSplit {
    std::vector<std::string> own;          // what CLI11 parses: the subcommand and its options
    std::vector<std::string> after_dashes; // everything after the first "--"
};

// Splits argv (without the program name) at the first "--".
DashSplit split_at_dashes(const std::vector<std::string>& arguments);

// Gives `after_dashes` to the positional argument of the subcommand that `own` names, before
// CLI11 parses `own` (so a required positional given after "--" counts). Throws
// CLI::ExtrasError when that subcommand takes no positional argument.
void assign_after_dashes(CLI::App& app, const DashSplit& split);

// After parsing: throws CLI::ValidationError when the positional was also given before "--".
void check_after_dashes(CLI::App& app, const DashSplit& split);

} // namespace loaderlens::cli
