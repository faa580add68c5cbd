// SPDX-License-Identifier: MIT
#include "advise_progress.hpp"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>

namespace loaderlens::cli {

namespace {

std::string minutes(double seconds) {
    const int s = static_cast<int>(seconds + 0.5);
    return fmt::format("{}:{:02}", s / 60, s % 60);
}

} // namespace

void AdviseProgress::show(std::size_t done, std::size_t total, double elapsed_s,
                          const std::string& setting) {
    if (!enabled_) return;
    constexpr int width = 20;
    // The bar is time against the budget: the grid may grow (round two) or stop early.
    const double share = budget_s_ > 0 ? std::clamp(elapsed_s / budget_s_, 0.0, 1.0) : 0;
    const int filled = static_cast<int>(share * width + 0.5);
    std::string line = fmt::format("advise [{}{}] {}/{} settings, {} of {}  {}",
                                   std::string(static_cast<std::size_t>(filled), '#'),
                                   std::string(static_cast<std::size_t>(width - filled), '.'), done,
                                   total, minutes(elapsed_s), minutes(budget_s_), setting);
    if (line.size() > 100) line.resize(100);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
}

void AdviseProgress::clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

} // namespace loaderlens::cli
