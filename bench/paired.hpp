// SPDX-License-Identifier: MIT
// Shared pieces of the sampler benchmark: the target process as the samplers see it, the raw
// reads the core is compared with, and the paired measurement.
//
// Why paired: on this 2-core VM, separate benchmarks of the very same read differ by ~10% from
// one repetition to the next, more than the 1.1x target itself. A paired benchmark alternates
// blocks of core calls and raw calls (~200 µs each, order swapped every block), timed with the
// thread's CPU clock (the kernel's work is done in this thread, and CPU time is less disturbed
// than wall time by other jobs). Drift of the machine then hits both sides alike, and the median
// of the per-block ratios is stable to ~1%.
#pragma once

#include "loaderlens/types.hpp"
#include "targets.hpp"

#include <algorithm>
#include <array>
#include <benchmark/benchmark.h>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <functional>
#include <optional>
#include <unistd.h>

namespace loaderlens::bench {

// One target process and the kept-open files its raw reads use.
struct Subject {
    std::string label; // "256 MiB"
    std::string tag;   // benchmark name prefix, "256M"
    std::size_t mapped_bytes = 0;
    ProcessInfo info;
    int statm = -1, status = -1, rollup = -1;

    Subject(std::string label_, std::string tag_, std::size_t bytes, pid_t pid)
        : label(std::move(label_)), tag(std::move(tag_)), mapped_bytes(bytes) {
        info.id = 1;
        info.key = {pid, read_proc_stat(pid).start_ticks};
        statm = open_proc("statm");
        status = open_proc("status");
        rollup = open_proc("smaps_rollup");
    }
    ~Subject() {
        for (int fd : {statm, status, rollup})
            close(fd);
    }
    Subject(const Subject&) = delete;
    Subject& operator=(const Subject&) = delete;

    std::string proc_path(const char* file) const {
        return "/proc/" + std::to_string(info.key.pid) + "/" + file;
    }

  private:
    int open_proc(const char* file) const {
        int fd = open(proc_path(file).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            throw SetupError("cannot open " + proc_path(file) + ": " + std::strerror(errno));
        return fd;
    }
};

// The raw reads copy into a plain buffer and do nothing else. 4 KiB holds statm, status, stat
// and smaps_rollup whole; multi-record files are read in 64 KiB pieces, as a careful reader would.
inline std::array<char, 64 * 1024> raw_buffer;

inline bool raw_pread(int fd) {
    return pread(fd, raw_buffer.data(), 4096, 0) > 0;
}

// Open, read until EOF, close: what a reader of a file it does not keep open must do.
inline bool raw_read_file(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t n = 0, total = 0;
    while ((n = read(fd, raw_buffer.data(), raw_buffer.size())) > 0)
        total += n;
    close(fd);
    return total > 0;
}

inline std::int64_t thread_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

template <typename F> std::int64_t time_block(F& call, int n, bool& ok) {
    const std::int64_t start = thread_ns();
    for (int i = 0; i < n && ok; ++i)
        ok = call();
    return thread_ns() - start;
}

inline double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const std::size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Calls per block so that a block lasts ~200 µs: the two clock reads per block (~0.5 µs) do not
// count, and the blocks of a pair are close enough in time to see the same machine.
template <typename F> int calibrate_block(F& call, bool& ok) {
    const std::int64_t one = time_block(call, 1, ok);
    return static_cast<int>(
        std::clamp<std::int64_t>(200'000 / std::max<std::int64_t>(one, 1), 1, 4096));
}

// The paired measurement. `core` and `raw` return false when the read failed, which ends the
// benchmark with an error: a timing of a failed read means nothing. Counters: core_us, raw_us
// (mean per call) and ratio (median over block pairs).
template <typename Core, typename Raw> void paired(benchmark::State& state, Core core, Raw raw) {
    bool ok = core() && raw(); // first calls open the sampler's files and size its buffers
    const int block = ok ? calibrate_block(raw, ok) : 1;
    std::vector<double> ratios;
    std::int64_t core_ns = 0, raw_ns = 0, calls = 0;
    bool core_first = true;
    for (auto _ : state) {
        std::int64_t c = 0, r = 0;
        if (core_first) {
            c = time_block(core, block, ok);
            r = time_block(raw, block, ok);
        } else { // the first block can warm caches for the second: alternate who goes first
            r = time_block(raw, block, ok);
            c = time_block(core, block, ok);
        }
        if (!ok) break;
        core_first = !core_first;
        core_ns += c;
        raw_ns += r;
        calls += block;
        if (r > 0) ratios.push_back(static_cast<double>(c) / static_cast<double>(r));
    }
    if (!ok || calls == 0) {
        state.SkipWithError("a read failed or returned nothing: is the target gone?");
        return;
    }
    state.counters["core_us"] = static_cast<double>(core_ns) / 1e3 / static_cast<double>(calls);
    state.counters["raw_us"] = static_cast<double>(raw_ns) / 1e3 / static_cast<double>(calls);
    state.counters["ratio"] = median(ratios);
}

// A core function with no raw counterpart (a parser on captured text): core_us only.
template <typename Core> void solo(benchmark::State& state, Core core) {
    bool ok = core();
    const int block = ok ? calibrate_block(core, ok) : 1;
    std::int64_t core_ns = 0, calls = 0;
    for (auto _ : state) {
        core_ns += time_block(core, block, ok);
        if (!ok) break;
        calls += block;
    }
    if (!ok || calls == 0) {
        state.SkipWithError("the call failed");
        return;
    }
    state.counters["core_us"] = static_cast<double>(core_ns) / 1e3 / static_cast<double>(calls);
}

// One line of a result table: a benchmark run on a subject, and the target its ratio must meet.
struct Row {
    const char* key; // benchmark name after the subject's tag
    const char* tier;
    const char* what;
    const char* vs; // "-" for solo rows
    std::optional<double> target;
    std::function<void(benchmark::State&, const Subject&)> run;
};

// Where the time of a tier goes (parsers, buffers, the tree scan): breakdown.cpp.
const std::vector<Row>& breakdown_rows();

} // namespace loaderlens::bench
