// SPDX-License-Identifier: MIT
// What a plot draws of a long series: within the visible range, at most two points per pixel
// column (the column's lowest and highest value, in their time order), so a replot costs the
// same for one hour as for one minute and no peak is lost. Points of the range's neighbours are
// kept so a line runs to the plot's edges; a gap (no process of the lane alive) breaks the line.
#pragma once

#include "lane_store.hpp"

#include <cstdint>
#include <vector>

namespace loaderlens::gui {

struct PlotPoint {
    double t_s = 0;   // seconds since the recording's start
    double value = 0; // NaN: a break in the line
};

struct TimeSpan {
    std::int64_t from_ms = 0, to_ms = 0;
};

// `points` in time order; `columns` > 0; `gaps` sorted spans where the line must break; values
// are scaled by `scale` (KiB -> MiB: 1/1024).
std::vector<PlotPoint> envelope(const std::vector<LanePoint>& points, double from_s, double to_s,
                                int columns, const std::vector<TimeSpan>& gaps = {},
                                double scale = 1.0 / 1024);

} // namespace loaderlens::gui
