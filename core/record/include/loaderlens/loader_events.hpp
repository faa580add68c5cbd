// SPDX-License-Identifier: MIT
// The reference loader's events file (LOADERLENS_LOADER_EVENTS), as the recorder reads it.
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/loader_run.hpp"

#include <string>

namespace loaderlens {

// Reads the loader's events file. A missing file gives an empty run; a line that is not a loader
// event is counted in unreadable_lines and skipped.
LoaderRun read_loader_events(const std::string& path, const RecordingClock& clock);

} // namespace loaderlens
