// SPDX-License-Identifier: MIT
// The dashboard's part of "every number printed twice is the same number" (issue 26): its models
// over a recording against `loaderlens report --json` of the same recording (tables, findings'
// key figures, carried figures' ages) and its per-lane sums and Σ PSS stack against core's
// series(), partial flags included. The CLI's consumers: tests/consumers_agree.hpp.
#pragma once

#include <string>

namespace loaderlens::test {

// BOOST_CHECKs every figure the dashboard shares with the report; returns how many it compared.
int check_gui_consumers_agree(const std::string& recording);

} // namespace loaderlens::test
