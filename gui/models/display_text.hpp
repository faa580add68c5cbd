// SPDX-License-Identifier: MIT
// How the dashboard writes figures: sizes as the CLI report writes them ("n/a" for an unavailable
// figure, never 0), times since the recording's start, exit statuses; and every text that comes
// from a recording (a host, a command line, a file's or a part's name, a finding's words) bounded
// before it reaches Qt.
#pragma once

#include "loaderlens/recording_data.hpp"
#include "loaderlens/types.hpp"

#include <cstdint>
#include <optional>
#include <QString>
#include <string_view>

namespace loaderlens::gui {

// `text` from a recording as the dashboard shows it: on one line as `report` writes names
// (loaderlens/one_line.hpp), and at most `max_chars` characters, the rest elided ("…") — a
// 100,000-character host name would otherwise cost gigabytes of text layout in a label. Only the
// first bytes are looked at: the cost is bounded whatever the recording holds.
constexpr int recorded_text_chars = 300;
QString recorded_text(std::string_view text, int max_chars = recorded_text_chars);

QString kib_text(const Kib& kib);
QString seconds_text(std::int64_t ms);               // "12.3 s"
QString exit_text(const std::optional<int>& status); // "exit 0", "killed by signal 9", "running"
// "node2 · " before a lane or line of a merged recording's part (its input's name); empty for a
// recording of one node.
QString part_prefix(const RecordingData& data, int part);
// The value a table sorts by: the figure, or -1 for an unavailable one (sorted first).
qlonglong sort_value(const Kib& kib);

} // namespace loaderlens::gui
