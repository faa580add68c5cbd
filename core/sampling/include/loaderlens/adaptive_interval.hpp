// SPDX-License-Identifier: MIT
// Keeps a tier's CPU under its share of the recorder's budget, as an account: the tier earns its
// share of every wall-clock millisecond, each run spends the CPU time it measured, and a run that
// leaves the account in debt pushes the next one out until the debt is paid. Unspent earnings are
// kept up to a cap, so one expensive run after a quiet spell (a worker mapping a new file) is paid
// from savings instead of stretching the tier.
//
// Why an account and not a moving average of the cost (what this was until 2026-11-26): the
// average remembers one expensive run for many cheap ones after it (a 201 ms PSS sweep kept the
// rollup tier stretched for ~40 s at 16 x 1 GiB), and it lets the first expensive runs after cheap
// ones overspend. The account stretches exactly as long as the cost needs, never longer, and over
// any window the tier spends at most share x window + cap. The cap is 2 s of earnings: with 10 s
// the 16 x 1 GiB fleet spent 6.25% of a core over 20 s at a 5% budget (bursts from savings).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace loaderlens {

class AdaptiveInterval {
  public:
    // budget_fraction: the share of one core this tier may use (0.02 = 2%). savings_window_ms: how
    // much wall time's earnings may be saved (the cap is budget_fraction x savings_window_ms).
    AdaptiveInterval(std::int64_t nominal_ms, double budget_fraction,
                     std::int64_t savings_window_ms = 2'000)
        : nominal_ms_(nominal_ms), budget_fraction_(budget_fraction),
          cap_us_(std::max(0.0, budget_fraction) * static_cast<double>(savings_window_ms) *
                  1000.0) {}

    // A run that ended at now_ms (the session's clock) and cost cpu_ns of CPU time.
    void observe_run(std::int64_t cpu_ns, std::int64_t now_ms) {
        const double us = std::max(0.0, static_cast<double>(cpu_ns) / 1000.0);
        // Earnings since the previous run (none before the first: the account opens empty).
        if (last_run_ms_) {
            const auto elapsed =
                static_cast<double>(std::max<std::int64_t>(0, now_ms - *last_run_ms_));
            balance_us_ = std::min(cap_us_, balance_us_ + budget_fraction_ * elapsed * 1000.0);
        }
        balance_us_ -= us;
        last_run_ms_ = now_ms;
        note_cost(cpu_ns);
    }
    // A run whose cost another account pays (a joint run): the tier log's average only.
    void note_cost(std::int64_t cpu_ns) {
        const double us = std::max(0.0, static_cast<double>(cpu_ns) / 1000.0);
        average_us_ = runs_ == 0 ? us : 0.7 * average_us_ + 0.3 * us; // for the tier log only
        ++runs_;
    }
    // How long after the last run the next one may start.
    std::int64_t interval_ms() const {
        if (budget_fraction_ <= 0 || balance_us_ >= 0) return nominal_ms_;
        const auto repay = static_cast<std::int64_t>(-balance_us_ / 1000.0 / budget_fraction_);
        return std::max(nominal_ms_, repay);
    }
    // A moving average of the cost per run (0.7 old, 0.3 new), recorded in the tier log.
    double average_cpu_us() const { return average_us_; }
    // Saved CPU time (negative: debt), in microseconds.
    double balance_us() const { return balance_us_; }
    // Whether the account is still in debt at now_ms, counting what it has earned since its last
    // run (a run then would stretch the tier).
    bool in_debt(std::int64_t now_ms) const {
        if (budget_fraction_ <= 0 || balance_us_ >= 0) return false;
        const auto since =
            static_cast<double>(std::max<std::int64_t>(0, now_ms - last_run_ms_.value_or(now_ms)));
        return balance_us_ + budget_fraction_ * since * 1000.0 < 0;
    }

  private:
    std::int64_t nominal_ms_;
    double budget_fraction_;
    double cap_us_;
    double balance_us_ = 0;
    std::optional<std::int64_t> last_run_ms_;
    double average_us_ = 0;
    long runs_ = 0;
};

} // namespace loaderlens
