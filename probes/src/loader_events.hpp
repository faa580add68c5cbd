// SPDX-License-Identifier: MIT
// What the loader tells the recorder, through two files a Python training script could write too:
//  - LOADERLENS_MARKERS: one line per marker, "@BOOTTIME_NS text" (exact time) or just "text";
//  - LOADERLENS_LOADER_EVENTS: JSON lines (config, worker, epoch, end), read into the recording
//    as they come. The format is documented in docs/recording.md ("Loader events").
// and what it hears back: LOADERLENS_SAMPLED, "N N" where N is the CLOCK_BOOTTIME at which the
// recorder read the latest marker it has taken a sample of every tier for.
// Each line goes out in one write() on an O_APPEND descriptor, so a reader never sees half a line
// followed by another writer's text. Under `record` each file comes as a descriptor it handed
// over (LOADERLENS_*_FD), checked to be the file it made and never reopened by its name: whoever
// can write the recording's directory may have swapped the name for a link by then. A name alone
// (a user's own LOADERLENS_MARKERS) is opened without following a link or blocking on a FIFO, and
// used only when it is a regular file.
#pragma once

#include "loaderlens/probes/loader.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace loaderlens::probes {

class LoaderEvents {
  public:
    explicit LoaderEvents(const LoaderOptions& options);
    ~LoaderEvents();
    LoaderEvents(const LoaderEvents&) = delete;
    LoaderEvents& operator=(const LoaderEvents&) = delete;

    void marker(const std::string& text, std::int64_t boot_ns);
    void event(nlohmann::json event);
    // Waits until the recorder has sampled every tier after the marker stamped `boot_ns` (its
    // LOADERLENS_SAMPLED file says so), at most `timeout_ms`. No file, or a wait that timed out
    // once (a recorder that does not answer): returns false at once, then and ever after.
    bool wait_until_sampled(std::int64_t boot_ns, std::int64_t timeout_ms = 2000);

  private:
    int markers_fd_ = -1, events_fd_ = -1, sampled_fd_ = -1;
};

std::int64_t boottime_now_ns();

} // namespace loaderlens::probes
