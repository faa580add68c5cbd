// Follows the marker file named by LOADERLENS_MARKERS: every complete line appended to it by any
// program (e.g. `print(f"epoch {e}", file=open(os.environ["LOADERLENS_MARKERS"], "a"))`) becomes a
// marker stamped with the time it was read (within one fast tick), or, for a line
// "@BOOTTIME_NS text", with that exact time (Python: time.clock_gettime_ns(time.CLOCK_BOOTTIME)).
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/types.hpp"

#include <string>
#include <vector>

namespace loaderlens {

class MarkerTail {
  public:
    explicit MarkerTail(std::string path) : path_(std::move(path)) {}
    std::vector<Marker> poll(const RecordingClock& clock);
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    long long offset_ = 0;
    std::string partial_;
};

} // namespace loaderlens
