// SPDX-License-Identifier: MIT
// The file named by LOADERLENS_SAMPLED: after each sample a marker asked for, the recorder writes
// the CLOCK_BOOTTIME (ns) at which it read the marker, so that a program can let its workers exit
// only once their epoch-end figures are taken (the reference loader waits for it, at most 2 s).
//
// Format: one line "N N\n", N in decimal, written in place at offset 0 (the file is a sidecar
// created by `record`, removed at the end: never replaced, so that its removal stays safe). The
// number appears twice so that a reader can tell a torn read (the two differ) and read again.
#pragma once

#include "loaderlens/sidecar.hpp"

#include <cstdint>

namespace loaderlens {

class SampleAck {
  public:
    // Writes through the descriptor `record` kept when it created the file (never by its name);
    // without one write() does nothing.
    explicit SampleAck(const Sidecar& sidecar);
    ~SampleAck();
    SampleAck(const SampleAck&) = delete;
    SampleAck& operator=(const SampleAck&) = delete;

    void write(std::int64_t marker_read_boot_ns);

  private:
    int fd_ = -1;
};

} // namespace loaderlens
