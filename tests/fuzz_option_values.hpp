// SPDX-License-Identifier: MIT
// Hostile values for the CLI's options, by the kind of value an option takes, each marked with
// whether it must be refused (it is not a value of that kind) or may be taken.
#pragma once

#include "fuzz_random.hpp"

#include <string>
#include <vector>

namespace loaderlens::test {

enum class ValueKind {
    int32,    // a count held in an int (workers, prefetch, epochs, rank, world)
    int64,    // a count held in an int64 (batch, num-samples, shard-size, window, cow-heap, ...)
    uint64,   // a seed
    real,     // a double (zipf-s)
    fraction, // a double in (0, 1] (subset)
    duration, // 5ms, 200us
    size,     // 4096, 64KiB
    percent,  // 5%
    interval, // fast=100ms
    regex,    // --worker-match
    shape,    // 3x32x32
    pid,      // --pid (no value of the catalogue is a process the test may record)
    path_in,  // a file or directory read
    path_out, // a file or directory written
};

struct HostileValue {
    std::string text;
    bool must_refuse = false;
    bool heavy = false; // asks for gigabytes: left out under ASan, where RLIMIT_AS cannot bound it
};

// The special files hostile paths point at (made by HostileOptions in its directory).
struct SpecialPaths {
    std::string directory, fifo, zero_device, null_device, full_device, dangling, loop,
        newline_copy, long_name, missing, victim;
};

// The catalogue for a kind; `good_input` is a symlink to a good input (path_in's control value).
std::vector<HostileValue> hostile_values(ValueKind kind, const SpecialPaths& paths,
                                         const std::string& good_input);
// A random value of (or near) a kind, never one that must be refused. With `long_runs` (an option
// whose large values legitimately take long: epochs, steps, pauses, samples per epoch) a number is
// small (< 8) or at least 2^40, which no such option can take without overflowing or running for
// days, so it must be refused at once or fail fast.
HostileValue random_value(ValueKind kind, FuzzRandom& random, bool long_runs);

} // namespace loaderlens::test
