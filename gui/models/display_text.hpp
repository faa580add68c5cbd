// SPDX-License-Identifier: MIT
// How the dashboard writes figures: sizes as the CLI report writes them ("n/a" for an unavailable
// figure, never 0), times since the recording's start, exit statuses.
#pragma once

#include "loaderlens/recording_data.hpp"
#include "loaderlens/types.hpp"

#include <cstdint>
#include <optional>
#include <QString>

namespace loaderlens::gui {

QString kib_text(const Kib& kib);
QString seconds_text(std::int64_t ms);               // "12.3 s"
QString exit_text(const std::optional<int>& status); // "exit 0", "killed by signal 9", "running"
// "node2 · " before a lane or line of a merged recording's part (its input's name); empty for a
// recording of one node.
QString part_prefix(const RecordingData& data, int part);
// The value a table sorts by: the figure, or -1 for an unavailable one (sorted first).
qlonglong sort_value(const Kib& kib);

} // namespace loaderlens::gui
