// Follows the marker file named by LOADERLENS_MARKERS: every complete line appended to it by any
// program (e.g. `print(f"epoch {e}", file=open(os.environ["LOADERLENS_MARKERS"], "a"))`) becomes a
// marker stamped with the time it was read (within one fast tick).
#pragma once

#include "loaderlens/types.hpp"

#include <string>
#include <vector>

namespace loaderlens {

class MarkerTail {
  public:
    explicit MarkerTail(std::string path) : path_(std::move(path)) {}
    std::vector<Marker> poll(std::int64_t now_ms);
    const std::string& path() const { return path_; }

  private:
    std::string path_;
    long long offset_ = 0;
    std::string partial_;
};

} // namespace loaderlens
