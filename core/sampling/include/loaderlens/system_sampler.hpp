// SPDX-License-Identifier: MIT
// The system tier: /proc/meminfo (through libproc2's meminfo API) and /dev/shm (docs/figures.md
// for each figure's source).
#pragma once

#include "loaderlens/types.hpp"

#include <memory>

namespace loaderlens {

// Reads the system tier. Keeps libproc2's meminfo context (its open /proc/meminfo) between
// readings; one per thread (libproc2's results belong to the context).
class SystemSampler {
  public:
    SystemSampler();
    ~SystemSampler();
    SystemSampler(const SystemSampler&) = delete;
    SystemSampler& operator=(const SystemSampler&) = delete;

    // /proc/meminfo and statvfs("/dev/shm"). A figure the kernel's meminfo does not have (an
    // older kernel, a container's meminfo) or that cannot be read stays empty, never 0.
    SystemSample read();

  private:
    struct Meminfo;
    std::unique_ptr<Meminfo> meminfo_;
};

// The same through one SystemSampler per calling thread.
SystemSample read_system();

} // namespace loaderlens
