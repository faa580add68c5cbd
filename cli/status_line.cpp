// SPDX-License-Identifier: MIT
#include "status_line.hpp"

#include "loaderlens/units.hpp"

#include <cstdio>
#include <fmt/format.h>

namespace loaderlens::cli {

void StatusLine::update(const LiveStatus& s) {
    if (!enabled_ || s.elapsed_ms - drawn_ms_ < 1000) return;
    drawn_ms_ = s.elapsed_ms;
    const std::int64_t seconds = s.elapsed_ms / 1000;
    std::string line =
        fmt::format("loaderlens {:02}:{:02}:{:02}  {} processes  ΣRSS {}  ΣPSS {}  -> {}",
                    seconds / 3600, seconds / 60 % 60, seconds % 60, s.processes,
                    format_kib(s.total_rss), format_kib(s.total_pss), output_);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
}

void StatusLine::clear() {
    if (!enabled_ || drawn_ms_ < 0) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
}

} // namespace loaderlens::cli
