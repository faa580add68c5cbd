// SPDX-License-Identifier: MIT
// The judgement of one fuzz command's end (FuzzRunner's rules, docs/cli.md "Exit codes").
#pragma once

#include "fuzz_runner.hpp"

#include <optional>
#include <string>

namespace loaderlens::test {

struct CommandEnd {
    bool timed_out = false;
    int status = 0; // wait status
    double seconds = 0;
    std::string out, err;
};

// Why the end is wrong, or nothing when it is right.
std::optional<std::string> judge_outcome(const FuzzCommand& command, const CommandEnd& end);

// Why `text` is not CSV with one header and rows of as many fields (RFC 4180), or nothing.
std::optional<std::string> csv_problem(const std::string& text);

} // namespace loaderlens::test
