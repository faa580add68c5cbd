// SPDX-License-Identifier: MIT
#include "toml_nesting_scan.hpp"

#include <string>

namespace loaderlens::cli {

std::optional<int> TomlNestingScan::too_deep() {
    while (i_ < text_.size()) {
        const char c = text_[i_];
        if (open_.empty() && line_start_) {
            if (c == ' ' || c == '\t' || c == '\r') {
                ++i_;
                continue;
            }
            line_start_ = false;
            if (c == '[') {
                if (!header()) return line_;
                continue;
            }
            if (c != '\n' && c != '#') {
                in_line_key_ = true;
                line_key_ = 1;
            }
        }
        if (c == '"' || c == '\'') {
            skip_string();
            continue;
        }
        ++i_;
        if (c == '#') {
            while (i_ < text_.size() && text_[i_] != '\n')
                ++i_;
        } else if (c == '\n') {
            ++line_;
            if (open_.empty()) line_start_ = true, in_line_key_ = false, line_key_ = 0;
        } else if (in_line_key_) {
            if (c == '.') ++line_key_;
            if (c == '=') in_line_key_ = false;
        } else if (!open_.empty() && open_.back().in_key) {
            if (c == '.') ++open_.back().key;
            if (c == '=') open_.back().in_key = false;
            if (c == '}') open_.pop_back();
        } else if (c == '[' || c == '{') {
            open_.push_back({c == '{' ? 1 : 0, c == '{'});
        } else if (c == ']' || c == '}') {
            if (!open_.empty()) open_.pop_back();
        } else if (c == ',' && !open_.empty() && open_.back().key > 0) {
            open_.back().key = 1;
            open_.back().in_key = true;
        }
        if (depth() > limit_) return line_;
    }
    return std::nullopt;
}

int TomlNestingScan::depth() const {
    int d = header_ + line_key_;
    for (const Open& o : open_)
        d += 1 + o.key;
    return d;
}

bool TomlNestingScan::header() {
    const bool array = i_ + 1 < text_.size() && text_[i_ + 1] == '[';
    i_ += array ? 2 : 1;
    header_ = 1 + (array ? 1 : 0);
    while (i_ < text_.size() && text_[i_] != ']' && text_[i_] != '\n') {
        if (text_[i_] == '"' || text_[i_] == '\'') {
            skip_string();
            continue;
        }
        if (text_[i_++] == '.' && ++header_ > limit_) return false;
    }
    return header_ <= limit_;
}

void TomlNestingScan::skip_string() {
    const char quote = text_[i_];
    const bool multi = text_.substr(i_, 3) == std::string(3, quote);
    i_ += multi ? 3 : 1;
    while (i_ < text_.size()) {
        const char c = text_[i_];
        if (quote == '"' && c == '\\') {
            if (i_ + 1 < text_.size() && text_[i_ + 1] == '\n') ++line_;
            i_ += 2;
            continue;
        }
        if (c == '\n') {
            if (!multi) return; // an unterminated string: toml++ says so
            ++line_;
        }
        if (c == quote && (!multi || text_.substr(i_, 3) == std::string(3, quote))) {
            i_ += multi ? 3 : 1;
            return;
        }
        ++i_;
    }
}

} // namespace loaderlens::cli
