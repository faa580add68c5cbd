// SPDX-License-Identifier: MIT
// What the fuzz suites share: the good inputs they damage (made once per suite run by the CLI
// itself), the seeds they announce, the chunked run of generated cases and the failure report.
#pragma once

#include "fuzz_runner.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace loaderlens::test {

// Good inputs, made with the CLI under `dir`.
struct GoodDatasets {
    std::string npy, raw, lmdb;
    std::string raw_record_size; // for --record-size
};
GoodDatasets make_good_datasets(const std::string& dir);
// `loaderlens replay` over a 1 MiB .npy: 2 workers, 2 epochs, 20 ms steps, residency and maps
// sampled often enough that every table has rows.
std::string make_good_recording(const std::string& dir);
// `loaderlens record -- loaderlens load ...` killed with SIGKILL after ~1.5 s: its data in
// FILE-wal (checked), no FILE-shm kept.
std::string make_killed_recording(const std::string& dir, const std::string& npy);

// Prints (BOOST_TEST_MESSAGE and stdout) the suite's seeds and how to replay one.
void announce_seeds(const std::string& suite, const std::vector<std::uint64_t>& seeds);

// Generates and runs cases [0, count) of one seed, `chunk` at a time (their inputs are made in a
// fresh directory under `scratch` and removed after the chunk ran). `make` returns the case of an
// index, its inputs written into the directory it is given. Only $LOADERLENS_FUZZ_CASE when set.
// A generator that throws is a failure of its case. Appends the failures' messages.
void run_cases(FuzzRunner& runner, std::uint64_t seed, std::size_t count,
               const std::function<FuzzCase(std::size_t index, const std::string& dir)>& make,
               const std::string& scratch, std::vector<std::string>& failures,
               std::size_t chunk = 32);

// One Boost.Test error per failure (each with its seed, case, damage and command) and a summary
// on stdout; the time and counts of the run.
void report_run(const std::string& suite, const FuzzRunner& runner,
                const std::vector<std::string>& failures, double seconds);

} // namespace loaderlens::test
