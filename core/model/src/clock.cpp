// SPDX-License-Identifier: MIT
#include "loaderlens/clock.hpp"

#include <ctime>
#include <unistd.h>

namespace loaderlens {

namespace {
std::int64_t read_clock(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
} // namespace

std::int64_t boottime_ns() {
    return read_clock(CLOCK_BOOTTIME);
}
std::int64_t realtime_ns() {
    return read_clock(CLOCK_REALTIME);
}
long clock_ticks_per_second() {
    static const long ticks = sysconf(_SC_CLK_TCK);
    return ticks;
}

RecordingClock::RecordingClock() : start_boot_ns_(boottime_ns()), start_unix_ns_(realtime_ns()) {}

std::int64_t RecordingClock::now_ms() const {
    return (boottime_ns() - start_boot_ns_) / 1'000'000;
}

std::int64_t RecordingClock::boot_ns_to_ms(std::int64_t boot_ns) const {
    return (boot_ns - start_boot_ns_) / 1'000'000;
}

std::int64_t RecordingClock::ticks_to_ms(std::uint64_t start_ticks) const {
    const std::int64_t start_ns =
        static_cast<std::int64_t>(start_ticks) * (1'000'000'000 / clock_ticks_per_second());
    return (start_ns - start_boot_ns_) / 1'000'000;
}

} // namespace loaderlens
