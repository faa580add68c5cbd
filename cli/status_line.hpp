// SPDX-License-Identifier: MIT
// The one-line live status `record` shows on a terminal.
#pragma once

#include "loaderlens/session.hpp"

#include <string>

namespace loaderlens::cli {

class StatusLine {
  public:
    StatusLine(bool enabled, std::string output) : enabled_(enabled), output_(std::move(output)) {}
    void update(const LiveStatus& status); // redraws at most once a second
    void clear();

  private:
    bool enabled_;
    std::string output_;
    std::int64_t drawn_ms_ = -1000;
};

} // namespace loaderlens::cli
