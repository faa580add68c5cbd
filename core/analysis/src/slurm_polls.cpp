// SPDX-License-Identifier: MIT
// What SLURM's jobacct_gather sees of a figure polling every JobAcctGatherFrequency seconds: the
// highest of its polls over the run. Where in the run the polls fall is not known (slurmstepd
// starts its timer with the step, and every sstat call adds a poll), so the run is polled at
// equally spaced phases and the spread is kept.
#include "diagnosis_parts.hpp"

#include <algorithm>

namespace loaderlens::diagnosis {

namespace {

// A poll sees the value of the latest tick at or before it (the figure as it was then).
Kib polled_max(const std::vector<SeriesPoint>& points, std::int64_t first_ms,
               std::int64_t period_ms, std::int64_t end_ms) {
    Kib best;
    std::size_t i = 0;
    const SeriesPoint* latest = nullptr;
    for (std::int64_t t = first_ms; t <= end_ms; t = saturating_add(t, period_ms)) {
        while (i < points.size() && points[i].t_ms <= t)
            latest = &points[i++];
        if (latest && latest->value && (!best || *latest->value > *best)) best = latest->value;
        if (period_ms <= 0) break;
    }
    return best;
}

} // namespace

std::optional<SchedulerView::Polled> polled_peak(const std::vector<SeriesPoint>& points,
                                                 int period_s, const Kib& over_kb) {
    if (period_s <= 0 || points.empty()) return std::nullopt;
    constexpr int phases = 16;
    const std::int64_t period_ms = static_cast<std::int64_t>(period_s) * 1000;
    const std::int64_t start = points.front().t_ms, end = points.back().t_ms;
    // A run shorter than two periods gets one poll or none wherever they fall: what SLURM
    // recorded of it is its final reading or an sstat's, not a periodic poll's.
    if (end - start < 2 * period_ms) return std::nullopt;
    std::vector<std::int64_t> maxima;
    SchedulerView::Polled polled;
    polled.period_s = period_s;
    for (int k = 0; k < phases; ++k) {
        const Kib seen = polled_max(points, start + period_ms * k / phases, period_ms, end);
        if (!seen) continue;
        maxima.push_back(*seen);
        if (over_kb && *seen > *over_kb) ++polled.phases_over;
    }
    if (maxima.empty()) return std::nullopt;
    std::sort(maxima.begin(), maxima.end());
    polled.phases = static_cast<int>(maxima.size());
    polled.low_kb = maxima.front();
    polled.high_kb = maxima.back();
    polled.likely_kb = maxima[maxima.size() / 2];
    return polled;
}

} // namespace loaderlens::diagnosis
