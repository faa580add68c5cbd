// SPDX-License-Identifier: MIT
// toml++ 3.3.0 parses nested tables, arrays and dotted keys by recursion: a file of 30,000
// nested dotted keys (80 KB) overflowed the stack. TomlNestingScan bounds the nesting first,
// iteratively, skipping strings and comments (a dot or bracket in them is not nesting). Depth is
// counted generously (an inline table counts for its key and its braces): the schema's deepest,
// `process = [{ role = "worker" }]`, is 4.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace loaderlens::cli {

class TomlNestingScan {
  public:
    TomlNestingScan(std::string_view text, int limit) : text_(text), limit_(limit) {}
    // The line where the nesting first passes the limit, or nothing.
    std::optional<int> too_deep();

  private:
    struct Open {
        int key; // segments of the key being read or valued (0: an array)
        bool in_key;
    };

    int depth() const;
    // [a.b.c] or [[a.b]]: the table every key after it is in. False when too deep.
    bool header();
    // A basic or literal string, one line or three quotes.
    void skip_string();

    std::string_view text_;
    int limit_;
    std::size_t i_ = 0;
    int line_ = 1;
    bool line_start_ = true;
    bool in_line_key_ = false;
    int header_ = 0, line_key_ = 0;
    std::vector<Open> open_; // never deeper than the limit: the scan stops there
};

} // namespace loaderlens::cli
