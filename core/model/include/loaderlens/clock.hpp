// SPDX-License-Identifier: MIT
// The recording clock: milliseconds since the recording started, on CLOCK_BOOTTIME so that
// process start times from /proc/PID/stat (ticks since boot) land on the same axis.
#pragma once

#include <cstdint>

namespace loaderlens {

std::int64_t boottime_ns();
std::int64_t realtime_ns();
long clock_ticks_per_second();

class RecordingClock {
  public:
    RecordingClock();
    RecordingClock(std::int64_t start_boot_ns, std::int64_t start_unix_ns)
        : start_boot_ns_(start_boot_ns), start_unix_ns_(start_unix_ns) {}
    std::int64_t now_ms() const;
    // Converts a process start time (stat field 22) to the recording clock; negative = before.
    std::int64_t ticks_to_ms(std::uint64_t start_ticks) const;
    // Converts a CLOCK_BOOTTIME reading (ns) taken by another process to the recording clock.
    std::int64_t boot_ns_to_ms(std::int64_t boot_ns) const;
    std::int64_t start_unix_ns() const { return start_unix_ns_; }

  private:
    std::int64_t start_boot_ns_;
    std::int64_t start_unix_ns_;
};

} // namespace loaderlens
