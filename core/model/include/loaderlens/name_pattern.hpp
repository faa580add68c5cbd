// SPDX-License-Identifier: MIT
// The one expansion of %-patterns in file names: %X is replaced by value(X) when it gives one,
// %% by %, anything else is kept as written. the CLI's expand_output_name (cli/output_name.hpp)
// gives the values of this process's SLURM job; the report gives a sibling task's from a
// recording's meta.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace loaderlens {

inline std::string
expand_name_pattern(const std::string& pattern,
                    const std::function<std::optional<std::string>(char)>& value) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        const char key = pattern[++i];
        if (key == '%') {
            out += '%';
        } else if (auto text = value(key)) {
            out += *text;
        } else {
            out += '%';
            out += key;
        }
    }
    return out;
}

} // namespace loaderlens
