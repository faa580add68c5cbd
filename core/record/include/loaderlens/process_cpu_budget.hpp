// SPDX-License-Identifier: MIT
// The recorder's whole CPU budget over a sliding window: the process's CPU time as the kernel
// counts it (every thread: the samplers, the writer, the main loop; what /proc/PID/stat and SLURM
// see), checked at every tick. A deep run starts only when what the process spent in the last
// 10 s plus what the run is expected to cost fits in budget x 10 s.
//
// Why that bounds every window, not only the ones ending at a run's start: take any 10 s window
// and the last deep run that starts in it, at s. Everything the window holds before s was in
// [s - 10 s, s], which the check saw; after s comes the run itself and the rest of the process
// (fast tier, writer), whose rate is the one already in the checked window. So a window exceeds
// the budget only by how much that rate or a run's cost beats its prediction, and by a single run
// costing more than half the window's budget (it runs once the window holds at most half: the
// floor, docs/recording.md). Earlier an account that saved at most a cap had to earn less than the
// budget to give back what the cap lent (rate = budget - cap / 10 s): with a costly first sweep it
// halved the rate and the deep tiers ran every 13-26 s at 2% while the recorder used 0.9% of a
// core. The window lets the tiers spend the whole budget; each tier's own share (AdaptiveInterval)
// still divides it between them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>

namespace loaderlens {

class ProcessCpuBudget {
  public:
    static constexpr std::int64_t window_ms = 10'000;

    explicit ProcessCpuBudget(double budget_fraction) : budget_(std::max(0.0, budget_fraction)) {}

    // The process's CPU time now (CLOCK_PROCESS_CPUTIME_ID) at now_ms.
    void update(std::int64_t process_cpu_ns, std::int64_t now_ms) {
        std::lock_guard lock(mutex_);
        if (!marks_.empty() && now_ms < marks_.back().ms) now_ms = marks_.back().ms;
        marks_.push_back({now_ms, process_cpu_ns});
        // Keep one mark at or before the window's start: what the window spent is measured from
        // it, so a window is never measured shorter than it is.
        while (marks_.size() > 2 && marks_[1].ms <= now_ms - window_ms)
            marks_.pop_front();
    }

    // When (session ms) a run expected to cost `cost_us` fits in the window: now_ms if it does.
    std::int64_t ready_at(double cost_us, std::int64_t now_ms) const {
        std::lock_guard lock(mutex_);
        if (budget_ <= 0 || marks_.empty()) return now_ms;
        const double limit_us = budget_ * window_ms * 1000.0;
        // A run costing more than half the window runs once the window holds at most the other
        // half: the rest of the process never leaves it empty, and the run cannot be split.
        const double want_us = std::min(cost_us, limit_us / 2);
        const std::int64_t cpu_now = marks_.back().cpu_ns;
        for (const Mark& mark : marks_) {
            const double spent_us = static_cast<double>(cpu_now - mark.cpu_ns) / 1000.0;
            if (&mark != &marks_.front()) {
                if (spent_us + want_us <= limit_us) return std::max(now_ms, mark.ms + window_ms);
                continue;
            }
            // The oldest mark stands for the window's start, or in the first 10 s for the
            // recorder's first tick (what it spent starting up is not the tiers'). Then the rest
            // of the process has not shown its rate yet: the window is opened gradually, half at
            // once (a first sweep) and the rest over the 10 s, so that the ticks still to come in
            // it find room. Opened whole, deep runs at once spent the window before its fast
            // ticks came (2.1% at 2% in the simulated case); held until that mark left it, the
            // deep tiers sat still for the first 10 s of every recording (fleet bench).
            const double opened =
                std::min(1.0, 0.5 + 0.5 * static_cast<double>(now_ms - mark.ms) / window_ms);
            if (spent_us + want_us <= limit_us * opened) return now_ms;
        }
        return std::max(now_ms, marks_.back().ms + window_ms);
    }

    // CPU the process spent over the last window (µs), measured from the mark at or before its
    // start.
    double spent_in_window_us() const {
        std::lock_guard lock(mutex_);
        if (marks_.size() < 2) return 0;
        return static_cast<double>(marks_.back().cpu_ns - marks_.front().cpu_ns) / 1000.0;
    }

  private:
    struct Mark {
        std::int64_t ms = 0, cpu_ns = 0;
    };
    mutable std::mutex mutex_;
    double budget_;
    std::deque<Mark> marks_;
};

} // namespace loaderlens
