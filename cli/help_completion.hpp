// SPDX-License-Identifier: MIT
// Bash completion written from the CLI's own option tree, so that it cannot drift from it.
#pragma once

#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <string>

namespace loaderlens::cli {

// The bash script completing `loaderlens`: commands, each command's options, the values of an
// option that lists them (--format), file names for the other values and for positionals, and the
// command after `--` (as bash completes a command).
std::string bash_completion(const CLI::App& app);

// `loaderlens completion bash`: prints bash_completion(app). Hidden from the help pages (the
// build writes it to share/bash-completion/completions/loaderlens). Add it after every command.
Runner add_completion(CLI::App& app);

} // namespace loaderlens::cli
