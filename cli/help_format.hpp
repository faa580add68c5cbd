// SPDX-License-Identifier: MIT
// Help pages that fit the terminal: one CLI11 formatter for every command, and the width it wraps
// to (issue 30: pages were up to 199 columns wide).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace loaderlens::cli {

// The narrowest page: below it a description column would hold a word or two per line.
inline constexpr std::size_t narrowest_help = 40;

// COLUMNS if it is a number, else the width of the terminal on standard output, else 80; at least
// narrowest_help.
std::size_t help_width();

// `text` cut at spaces into lines of at most `width` columns. The first line starts at column
// `first` (already written by the caller); the next ones are indented by `hanging` spaces. A
// newline in `text` starts a new line; a word longer than a line is cut.
std::string wrap_text(const std::string& text, std::size_t width, std::size_t first,
                      std::size_t hanging);

class HelpFormatter : public CLI::Formatter {
  public:
    explicit HelpFormatter(std::size_t width);
    std::string make_option(const CLI::Option* opt, bool is_positional) const override;
    std::string make_subcommand(const CLI::App* sub) const override;
    std::string make_expanded(const CLI::App* sub) const override;
    std::string make_description(const CLI::App* app) const override;
    std::string make_usage(const CLI::App* app, std::string name) const override;
    std::string make_footer(const CLI::App* app) const override;

  private:
    // A name in the left column and its description wrapped in the right one; `nesting` is the
    // indent CLI11 adds to every line after the first (an option group's two spaces).
    std::string entry(const std::string& name, const std::string& description,
                      std::size_t nesting) const;
    std::size_t width_;
    // Set while an option group is being written (make_expanded).
    mutable std::size_t nesting_ = 0;
};

// Sets a HelpFormatter of help_width() on `app`: commands and option groups added after inherit it.
void use_help_formatter(CLI::App& app);

} // namespace loaderlens::cli
