// SPDX-License-Identifier: MIT
#include "envelope.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loaderlens::gui {

namespace {

// Whether a gap lies between two ticks: the line from a to b would cross a time no process of
// the lane was alive.
bool gap_between(const std::vector<TimeSpan>& gaps, std::int64_t a_ms, std::int64_t b_ms) {
    auto it = std::lower_bound(gaps.begin(), gaps.end(), a_ms,
                               [](const TimeSpan& g, std::int64_t t) { return g.to_ms < t; });
    return it != gaps.end() && it->from_ms >= a_ms && it->to_ms <= b_ms;
}

} // namespace

std::vector<PlotPoint> envelope(const std::vector<LanePoint>& points, double from_s, double to_s,
                                int columns, const std::vector<TimeSpan>& gaps, double scale) {
    std::vector<PlotPoint> out;
    if (points.empty() || columns <= 0 || !(to_s > from_s)) return out;
    const auto from_ms = static_cast<std::int64_t>(std::floor(from_s * 1000));
    const auto to_ms = static_cast<std::int64_t>(std::ceil(to_s * 1000));
    auto first = std::lower_bound(points.begin(), points.end(), from_ms,
                                  [](const LanePoint& p, std::int64_t t) { return p.t_ms < t; });
    auto last = std::upper_bound(points.begin(), points.end(), to_ms,
                                 [](std::int64_t t, const LanePoint& p) { return t < p.t_ms; });
    if (first != points.begin()) --first; // the neighbour outside: the line reaches the edge
    if (last != points.end()) ++last;
    const double column_ms = (to_s - from_s) * 1000.0 / columns;
    const double nan = std::numeric_limits<double>::quiet_NaN();

    std::int64_t previous_ms = std::numeric_limits<std::int64_t>::min();
    auto emit = [&](const LanePoint& p) {
        if (previous_ms != std::numeric_limits<std::int64_t>::min() &&
            gap_between(gaps, previous_ms, p.t_ms))
            out.push_back({(static_cast<double>(previous_ms + p.t_ms) / 2) / 1000.0, nan});
        out.push_back({static_cast<double>(p.t_ms) / 1000.0, static_cast<double>(p.kib) * scale});
        previous_ms = p.t_ms;
    };
    // Count per column: few points draw as they are.
    if (std::distance(first, last) <= 2 * static_cast<std::ptrdiff_t>(columns)) {
        for (auto it = first; it != last; ++it)
            emit(*it);
        return out;
    }
    auto column_of = [&](std::int64_t t) {
        return static_cast<std::int64_t>(
            std::floor((static_cast<double>(t) - from_s * 1000.0) / column_ms));
    };
    auto it = first;
    while (it != last) {
        const std::int64_t column = column_of(it->t_ms);
        auto low = it, high = it;
        auto end = it;
        // A gap inside a column still breaks the line: the column ends at it.
        while (end != last && column_of(end->t_ms) == column &&
               (end == it || !gap_between(gaps, std::prev(end)->t_ms, end->t_ms))) {
            if (end->kib < low->kib) low = end;
            if (end->kib > high->kib) high = end;
            ++end;
        }
        if (low == high) {
            emit(*low);
        } else if (low->t_ms <= high->t_ms) {
            emit(*low);
            emit(*high);
        } else {
            emit(*high);
            emit(*low);
        }
        it = end;
    }
    return out;
}

} // namespace loaderlens::gui
