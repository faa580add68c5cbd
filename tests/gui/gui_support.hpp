// SPDX-License-Identifier: MIT
// What the GUI tests share: real replays of the scenarios (recorded once per test process and
// removed at its end), where screenshots go, and how a picture is judged not empty.
#pragma once

#include "recording_document.hpp"

#include <ostream>
#include <QImage>
#include <QRect>
#include <string>
#include <vector>

namespace loaderlens::gui { // so that Boost.Test can print it in failure messages
inline std::ostream& operator<<(std::ostream& out, RecordingDocument::State state) {
    return out << to_text(state).toStdString();
}
} // namespace loaderlens::gui

namespace loaderlens::test {

// A recording of a scenario (docs/loader.md's table), made by `loaderlens replay` on first use:
// 1 (.npy mmap, 4 workers, shuffle, 2 epochs), 4 (LMDB, 4 persistent workers, 3 epochs),
// 7 (copy-on-read: 64 MiB heap of objects in main, 2 workers).
const std::string& scenario_recording(int scenario);
// The slots of the workers a recording holds (read with core's Recording, not the GUI).
int worker_slots_of(const std::string& recording);
// Where screenshots are kept for a person to look at: $LOADERLENS_GUI_SHOTS, else
// gui-screenshots/ in the working directory (the build's tests/).
std::string screenshot_dir();
// Pixels inside `area` that are coloured (saturated, not the white background, the grey grid or
// black text): what a plotted line or a filled area leaves.
int coloured_pixels(const QImage& image, const QRect& area);
// A replay argv for `loaderlens replay` writing `output` while it runs for about `seconds`.
std::vector<std::string> long_replay(const std::string& dataset, const std::string& output,
                                     int seconds);
// A small .npy dataset for the runs above (made once per test process).
const std::string& small_dataset();

} // namespace loaderlens::test
