// SPDX-License-Identifier: MIT
// What the loader tells the recorder, through two files a Python training script could write too:
//  - LOADERLENS_MARKERS: one line per marker, "@BOOTTIME_NS text" (exact time) or just "text";
//  - LOADERLENS_LOADER_EVENTS: JSON lines (config, worker, epoch, end), read into the recording
//    when the run ends. The format is documented in docs/recording.md ("Loader events").
// Each line goes out in one write() on an O_APPEND descriptor, so a reader never sees half a line
// followed by another writer's text.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace loaderlens::probes {

class LoaderEvents {
  public:
    LoaderEvents(const std::optional<std::string>& markers_path,
                 const std::optional<std::string>& events_path);
    ~LoaderEvents();
    LoaderEvents(const LoaderEvents&) = delete;
    LoaderEvents& operator=(const LoaderEvents&) = delete;

    void marker(const std::string& text, std::int64_t boot_ns);
    void event(nlohmann::json event);

  private:
    int markers_fd_ = -1, events_fd_ = -1;
};

std::int64_t boottime_now_ns();

} // namespace loaderlens::probes
