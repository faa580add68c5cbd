// SPDX-License-Identifier: MIT
// Each subcommand registers its options on the app and returns the code to exit with.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace loaderlens::cli {

// Documented exit codes (docs/cli.md, "Exit codes").
inline constexpr int exit_ok = 0;
inline constexpr int exit_internal = 1;
inline constexpr int exit_bad_input = 2;
inline constexpr int exit_budget_failed = 3;  // check: a rule failed
inline constexpr int exit_command_failed = 4; // check: the command it recorded failed

using Runner = std::function<int()>;

Runner add_record(CLI::App& app);
Runner add_report(CLI::App& app);
Runner add_export(CLI::App& app);
Runner add_mkdata(CLI::App& app);
Runner add_load(CLI::App& app);
Runner add_replay(CLI::App& app);
Runner add_ps(CLI::App& app);
Runner add_tail(CLI::App& app);
Runner add_check(CLI::App& app);
Runner add_merge(CLI::App& app);
Runner add_advise(CLI::App& app);

// "250ms", "2s", "500us", "5m" (or "5min"), "1h" or a bare number of milliseconds, in microseconds;
// nothing for text that is not a duration, negative, or over a day.
std::optional<std::int64_t> parse_duration_us(const std::string& text);

// "4096", "64KiB", "256MiB", "1.5GiB", "64K" (powers of 1024); "10kB", "10MB" (powers of 1000),
// in bytes; nothing for text that is not a size, below 1 or above 2^62.
std::optional<std::int64_t> parse_size(const std::string& text);
// parse_size, and "0" (a size that may be nothing: --chunk-cache 0, advise --reserve 0).
std::optional<std::int64_t> parse_size_or_zero(const std::string& text);

// Whether `text` starts with a digit or '.', as every duration, size and share does (std::stod
// alone would skip leading white space, and take a sign).
bool starts_like_a_number(const std::string& text);

// Why `file` cannot name a recording to read (empty: said with the name quoted, so that the line
// names it), or nothing.
std::optional<std::string> recording_name_problem(const std::string& file);

// Prints "loaderlens: <message>" on stderr (one line).
void print_error(const std::string& message);

} // namespace loaderlens::cli
