// SPDX-License-Identifier: MIT
// The system tier: /proc/meminfo and /dev/shm (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/types.hpp"

namespace loaderlens {

// /proc/meminfo and statvfs("/dev/shm").
SystemSample read_system();

} // namespace loaderlens
