// SPDX-License-Identifier: MIT
// The recorder's whole CPU budget as one account: it earns a rate of every wall-clock
// millisecond, keeps at most `cap` of it, and is charged the CPU time the kernel counted for the
// whole process (every thread: the samplers, the writer, the main loop), not what the tiers
// measured of themselves. A deep run starts only once the account can pay what it is expected to
// cost; the fast tier waits while the account is in debt.
//
// Why the rate is below the budget: over any window W the process then spends at most
// cap + rate x W (+ what a run costs beyond its prediction), and the contract is budget x W over
// any 10 s window. A run is not divisible, so the account must be able to save one run's cost
// (cap >= the costliest run) and the rate gives back what the cap may lend: rate = budget +
// slack - cap / W. The cap follows what the next deep run may cost; one that costs more than half
// of budget x W waits for a full account and overruns the window by what it costs beyond that
// (docs/recording.md: the floor).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>

namespace loaderlens {

class ProcessCpuBudget {
  public:
    static constexpr std::int64_t window_ms = 10'000;
    // Of the contract's 0.2 points of a core over 10 s (clock granularity), what the account may
    // use: the rest is left to whoever reads the process's 10 ms ticks.
    static constexpr double slack = 0.001;

    explicit ProcessCpuBudget(double budget_fraction) : budget_(std::max(0.0, budget_fraction)) {
        set_cap(min_cap_us());
        balance_us_ = cap_us_;
    }

    // The process's CPU time now (CLOCK_PROCESS_CPUTIME_ID) at now_ms: earnings and spending
    // since the last update.
    void update(std::int64_t process_cpu_ns, std::int64_t now_ms) {
        std::lock_guard lock(mutex_);
        update_locked(process_cpu_ns, now_ms);
    }

    // What the next deep run may cost (every deep tier together, each at its last cost): the cap
    // follows it, so the account can always save for that run, and a spike that is over (the
    // workers' first touches) stops lowering the rate at once.
    void expect_run_cost(double cpu_us) {
        std::lock_guard lock(mutex_);
        set_cap(std::clamp(1.25 * cpu_us, min_cap_us(), max_cap_us()));
    }

    // When (session ms) the account will hold `cost_us` (at most its cap): now_ms if it does.
    std::int64_t ready_at(double cost_us, std::int64_t now_ms) const {
        std::lock_guard lock(mutex_);
        if (budget_ <= 0) return now_ms;
        const double want = std::min(cost_us, cap_us_);
        if (balance_us_ >= want) return now_ms;
        return now_ms + static_cast<std::int64_t>((want - balance_us_) / rate_ / 1000.0) + 1;
    }

    double balance_us() const {
        std::lock_guard lock(mutex_);
        return balance_us_;
    }
    double rate() const {
        std::lock_guard lock(mutex_);
        return rate_;
    }
    double cap_us() const {
        std::lock_guard lock(mutex_);
        return cap_us_;
    }

  private:
    double min_cap_us() const { return 0.1 * budget_ * window_ms * 1000.0; }
    double max_cap_us() const { return 0.5 * budget_ * window_ms * 1000.0; }
    void set_cap(double cap_us) {
        cap_us_ = cap_us;
        rate_ = std::max(budget_ / 2, budget_ + slack - cap_us_ / 1000.0 / window_ms);
        balance_us_ = std::min(balance_us_, cap_us_);
    }
    void update_locked(std::int64_t process_cpu_ns, std::int64_t now_ms) {
        if (last_ms_) {
            const auto elapsed = static_cast<double>(std::max<std::int64_t>(0, now_ms - *last_ms_));
            balance_us_ = std::min(cap_us_, balance_us_ + rate_ * elapsed * 1000.0);
            balance_us_ -=
                static_cast<double>(std::max<std::int64_t>(0, process_cpu_ns - last_cpu_ns_)) /
                1000.0;
        }
        last_ms_ = now_ms;
        last_cpu_ns_ = process_cpu_ns;
    }

    mutable std::mutex mutex_;
    double budget_;
    double cap_us_ = 0, rate_ = 0, balance_us_ = 0;
    std::optional<std::int64_t> last_ms_;
    std::int64_t last_cpu_ns_ = 0;
};

} // namespace loaderlens
