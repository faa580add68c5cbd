// SPDX-License-Identifier: MIT
// Follows the marker file named by LOADERLENS_MARKERS: every complete line appended to it by any
// program (e.g. `print(f"epoch {e}", file=open(os.environ["LOADERLENS_MARKERS"], "a"))`) becomes a
// marker stamped with the time it was read (within one fast tick), or, for a line
// "@BOOTTIME_NS text", with that exact time (Python: time.clock_gettime_ns(time.CLOCK_BOOTTIME)).
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/types.hpp"

#include <string>
#include <sys/stat.h>
#include <vector>

namespace loaderlens {

class MarkerTail {
  public:
    explicit MarkerTail(std::string path) : path_(std::move(path)) {}
    std::vector<Marker> poll(const RecordingClock& clock);
    const std::string& path() const { return path_; }

  private:
    // Whether the file was rewritten since the last poll: replaced (another inode), truncated,
    // or rewritten in place (open(path, "w")) to the same or a greater length, which the size
    // alone cannot tell: the last bytes read are then no longer where they were.
    bool rewritten(const struct stat& st, int fd) const;

    std::string path_;
    long long offset_ = 0;
    std::string partial_;
    std::string last_read_; // the last bytes before offset_ (up to 64)
    ino_t inode_ = 0;
    timespec mtime_{};
};

} // namespace loaderlens
