// SPDX-License-Identifier: MIT
// The reference loader's events file (LOADERLENS_LOADER_EVENTS), as the recorder reads it.
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/loader_run.hpp"
#include "loaderlens/sidecar.hpp"

#include <string>

namespace loaderlens {

// Adds one line of the events file to `run` (a line that is no loader event: unreadable_lines).
void add_loader_event(const std::string& line, const RecordingClock& clock, LoaderRun& run);

// Follows the events file while the loader runs: each poll gives the complete lines appended
// since the last, so that epochs, workers and progress reach the recording as they happen (a live
// reader sees them). The loader only appends to the file (probes/, one write per line). Read
// through the descriptor `record` kept when it created the file, never by its name.
class LoaderEventTail {
  public:
    explicit LoaderEventTail(const Sidecar& sidecar);
    ~LoaderEventTail();
    LoaderEventTail(const LoaderEventTail&) = delete;
    LoaderEventTail& operator=(const LoaderEventTail&) = delete;
    // `at_end`: the run is over; a last line without its newline is taken too.
    LoaderRun poll(const RecordingClock& clock, bool at_end = false);

  private:
    static constexpr std::size_t longest_line = 1 << 20;
    int fd_ = -1;
    std::string partial_;
};

} // namespace loaderlens
