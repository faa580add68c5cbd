// SPDX-License-Identifier: MIT
#include "help_format.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <sys/ioctl.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

// Wider lines are hard to read, whatever the terminal (clap stops at 100 too).
constexpr std::size_t widest_help = 100;

std::size_t terminal_columns() {
    if (const char* columns = std::getenv("COLUMNS")) {
        const std::string_view text(columns);
        if (!text.empty() && text.size() <= 6 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
            if (const auto value = static_cast<std::size_t>(std::atol(columns)); value > 0)
                return value;
    }
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    return 80;
}

} // namespace

std::size_t help_width() {
    return std::clamp(terminal_columns(), narrowest_help, widest_help);
}

std::string wrap_text(const std::string& text, std::size_t width, std::size_t first,
                      std::size_t hanging) {
    // A hanging indent at or past the edge would leave no room at all.
    hanging = std::min(hanging, width / 2);
    std::string out;
    std::size_t column = first;
    bool line_empty = true;
    auto new_line = [&] {
        out += '\n';
        out.append(hanging, ' ');
        column = hanging;
        line_empty = true;
    };
    std::size_t start = 0;
    for (bool first_paragraph = true; start <= text.size(); first_paragraph = false) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        if (!first_paragraph) new_line();
        std::size_t at = start;
        while (at < end) {
            if (text[at] == ' ') {
                ++at;
                continue;
            }
            const std::size_t word_end = std::min(text.find(' ', at), end);
            std::string_view word(text.data() + at, word_end - at);
            at = word_end;
            while (!word.empty()) {
                const std::size_t need = (line_empty ? 0 : 1) + word.size();
                if (column + need <= width) {
                    if (!line_empty) out += ' ';
                    out += word;
                    column += need;
                    line_empty = false;
                    break;
                }
                if (!line_empty || (column > hanging && hanging + word.size() <= width)) {
                    new_line();
                    continue;
                }
                // A word wider than the line (a long path): cut where the line ends.
                const std::size_t room = column < width ? width - column : 1;
                out += word.substr(0, room);
                word.remove_prefix(std::min(room, word.size()));
                if (!word.empty())
                    new_line();
                else
                    line_empty = false;
            }
        }
        start = end + 1;
    }
    return out;
}

HelpFormatter::HelpFormatter(std::size_t width) : width_(std::max(width, narrowest_help)) {
    // 30 columns of names at 80 (CLI11's own), narrower with the page.
    column_width(std::clamp<std::size_t>(width_ * 3 / 8, 16, 30));
}

std::string HelpFormatter::entry(const std::string& name, const std::string& description,
                                 std::size_t nesting) const {
    const std::size_t width = width_ - nesting;
    const std::size_t column = column_width_;
    std::string out = "  " + wrap_text(name, width, 2, 6);
    const std::size_t last_line = out.size() - std::min(out.size(), out.rfind('\n') + 1);
    if (description.empty()) return out + "\n";
    // Two spaces at least between a name and its text: help2man (the man pages) splits there.
    if (out.find('\n') == std::string::npos && last_line + 2 <= column) {
        out.append(column - last_line, ' ');
    } else {
        out += '\n';
        out.append(column, ' ');
    }
    return out + wrap_text(description, width, column, column) + "\n";
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
    return entry(make_option_name(opt, is_positional) + make_option_opts(opt),
                 make_option_desc(opt), nesting_);
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
    return entry(sub->get_display_name(true), sub->get_description(), nesting_);
}

std::string HelpFormatter::make_expanded(const CLI::App* sub) const {
    // CLI11 indents every line of an option group but its title by two more spaces.
    nesting_ += 2;
    const std::string out = CLI::Formatter::make_expanded(sub);
    nesting_ -= 2;
    // Its title ("[Option Group: ...]") is the one line not indented.
    const std::size_t title_end = std::min(out.find('\n'), out.size());
    return wrap_text(out.substr(0, title_end), width_ - nesting_, 0, 2) + out.substr(title_end);
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
    std::string text = CLI::Formatter::make_description(app);
    if (text.empty()) return text;
    text.pop_back();
    return wrap_text(text, width_ - nesting_, 0, 0) + "\n";
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
    std::string text = CLI::Formatter::make_usage(app, std::move(name));
    while (!text.empty() && text.back() == '\n')
        text.pop_back();
    return wrap_text(text, width_ - nesting_, 0, 4) + "\n";
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
    const std::string footer = app->get_footer();
    if (footer.empty()) return footer;
    // Line by line, each keeping its indent; a wrapped example continues four columns further.
    std::string out;
    std::size_t start = 0;
    while (start <= footer.size()) {
        const std::size_t end = std::min(footer.find('\n', start), footer.size());
        const std::string line = footer.substr(start, end - start);
        const std::size_t indent = std::min(line.find_first_not_of(' '), line.size());
        out.append(indent, ' ');
        out += wrap_text(line.substr(indent), width_, indent, indent == 0 ? 0 : indent + 4);
        out += '\n';
        start = end + 1;
    }
    return out;
}

void use_help_formatter(CLI::App& app) {
    app.formatter(std::make_shared<HelpFormatter>(help_width()));
}

} // namespace loaderlens::cli
