// SPDX-License-Identifier: MIT
// How the dashboard writes figures: sizes as the CLI report writes them ("n/a" for an unavailable
// figure, never 0), times since the recording's start, exit statuses.
#pragma once

#include "loaderlens/types.hpp"

#include <cstdint>
#include <optional>
#include <QString>

namespace loaderlens::gui {

QString kib_text(const Kib& kib);
QString seconds_text(std::int64_t ms);               // "12.3 s"
QString exit_text(const std::optional<int>& status); // "exit 0", "killed by signal 9", "running"
// The value a table sorts by: the figure, or -1 for an unavailable one (sorted first).
qlonglong sort_value(const Kib& kib);

} // namespace loaderlens::gui
