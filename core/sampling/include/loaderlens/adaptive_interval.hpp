// SPDX-License-Identifier: MIT
// Keeps a tier's CPU under its share of the recorder's budget: the tier measures the CPU time of
// each run, and its interval is stretched to cost / budget whenever that exceeds the nominal one.
#pragma once

#include <algorithm>
#include <cstdint>

namespace loaderlens {

class AdaptiveInterval {
  public:
    // budget_fraction: the share of one core this tier may use (0.02 = 2%).
    AdaptiveInterval(std::int64_t nominal_ms, double budget_fraction)
        : nominal_ms_(nominal_ms), budget_fraction_(budget_fraction) {}

    void observe_run(std::int64_t cpu_ns) {
        // A short moving average: one expensive run (a process mapping a new file) should not
        // stall the tier, a lasting cost should.
        const double us = static_cast<double>(cpu_ns) / 1000.0;
        average_us_ = runs_ == 0 ? us : 0.7 * average_us_ + 0.3 * us;
        ++runs_;
    }
    std::int64_t interval_ms() const {
        if (budget_fraction_ <= 0) return nominal_ms_;
        const auto needed = static_cast<std::int64_t>(average_us_ / 1000.0 / budget_fraction_);
        return std::max(nominal_ms_, needed);
    }
    double average_cpu_us() const { return average_us_; }

  private:
    std::int64_t nominal_ms_;
    double budget_fraction_;
    double average_us_ = 0;
    long runs_ = 0;
};

} // namespace loaderlens
