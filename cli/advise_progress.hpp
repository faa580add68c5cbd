// SPDX-License-Identifier: MIT
// `advise`'s progress bar on a terminal (stderr): settings done, time spent of the budget, and
// the setting being replayed. Nothing when stderr is not a terminal.
#pragma once

#include <cstddef>
#include <string>

namespace loaderlens::cli {

class AdviseProgress {
  public:
    AdviseProgress(bool enabled, double budget_s) : enabled_(enabled), budget_s_(budget_s) {}
    void show(std::size_t done, std::size_t total, double elapsed_s, const std::string& setting);
    void clear();

  private:
    bool enabled_;
    double budget_s_;
    bool drawn_ = false;
};

} // namespace loaderlens::cli
