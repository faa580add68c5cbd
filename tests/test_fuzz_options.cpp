// SPDX-License-Identifier: MIT
// Fuzz: hostile values for every numeric and path option of every subcommand (HostileOptions:
// negative, zero, huge, 1e300, 1e-300, NaN, inf, 2^63, empty, control characters and newlines in
// paths, a directory, a FIFO, a device, symlinks), outputs that are inputs or planted symlinks,
// and a closed stdout. Each must end within 10 s in exit 0 or one line naming the option or file
// with its documented code; a value that is no value of its kind must be refused. The whole
// catalogue once (seed 1), then random values for every seed (under ASan: every other case of the
// catalogue, seed 1 and the drawn one).
#include "fuzz_options.hpp"
#include "fuzz_suite.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>

using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {
constexpr std::size_t random_cases_per_seed = fuzz_sanitized ? 20 : 40;
} // namespace

BOOST_AUTO_TEST_SUITE(fuzz_options)

BOOST_AUTO_TEST_CASE(hostile_option_values_end_in_a_run_or_one_line) {
    const auto started = std::chrono::steady_clock::now();
    TempDir dir;
    const GoodDatasets good = make_good_datasets(dir.file(""));
    const std::string recording = dir.file("good.db");
    {
        const auto made = run({cli_path(), "replay", "-q", "-o", recording, "--workers", "1",
                               "--epochs", "1", "--", good.npy});
        BOOST_REQUIRE_MESSAGE(made.exit_code == 0, "fuzz setup: replay failed: " + made.err);
    }
    const HostileOptions options({good.npy, good.raw, good.lmdb, recording, good.raw_record_size},
                                 dir.file("options"));
    const auto seeds = fuzz_sanitized ? fuzz_seeds({1}) : fuzz_seeds({1, 2});
    announce_seeds("fuzz_options", seeds);
    const std::string scratch = dir.file("scratch");
    fs::create_directories(scratch);
    FuzzRunner runner(scratch);
    std::vector<std::string> failures;
    const auto only = fuzz_only_case();
    for (const std::uint64_t seed : seeds) {
        std::vector<FuzzCase> cases;
        if (seed == 1) cases = options.sweep(seed);
        const std::size_t first = cases.empty() ? 0 : cases.back().index + 1;
        for (auto& random_case : options.random_cases(seed, first, random_cases_per_seed))
            cases.push_back(std::move(random_case));
        if (only) std::erase_if(cases, [&](const FuzzCase& c) { return c.index != *only; });
        for (auto& message : runner.run(cases))
            failures.push_back(std::move(message));
    }
    report_run("fuzz_options", runner, failures,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

BOOST_AUTO_TEST_SUITE_END()
