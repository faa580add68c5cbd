// SPDX-License-Identifier: MIT
// The examples of every help page, in one table: command -> lines of real use.
#pragma once

#include <CLI/CLI.hpp>

namespace loaderlens::cli {

// Appends each command's "Examples:" (and, for record, where markers come from) to its footer,
// after the footer the command set itself. Call once every command is added.
void attach_examples(CLI::App& app);

} // namespace loaderlens::cli
