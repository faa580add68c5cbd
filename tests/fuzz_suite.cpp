// SPDX-License-Identifier: MIT
#include "fuzz_suite.hpp"

#include "fuzz_random.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

namespace loaderlens::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {
void must_run(const std::vector<std::string>& argv) {
    const RunResult result = run(argv, std::chrono::seconds(60));
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "fuzz setup: " + shell_line(argv) + " exited " +
                                                     std::to_string(result.exit_code) + ": " +
                                                     result.err);
}
} // namespace

GoodDatasets make_good_datasets(const std::string& dir) {
    GoodDatasets good{dir + "/good.npy", dir + "/good.raw", dir + "/good.lmdb", "256"};
    const std::string cli = cli_path();
    must_run({cli, "mkdata", "npy", good.npy, "--count", "64", "--shape", "4x8", "--dtype", "f4"});
    must_run(
        {cli, "mkdata", "raw", good.raw, "--count", "64", "--record-size", good.raw_record_size});
    must_run({cli, "mkdata", "lmdb", good.lmdb, "--count", "64", "--value-size", "1024"});
    return good;
}

std::string make_good_recording(const std::string& dir) {
    const std::string cli = cli_path(), npy = dir + "/small.npy", db = dir + "/good.db";
    if (!fs::exists(npy))
        must_run({cli, "mkdata", "npy", npy, "--count", "1024", "--shape", "256", "--dtype", "f4"});
    must_run({cli, "replay", "-q", "-o", db, "--workers", "2", "--epochs", "2", "--step-time",
              "20ms", "--interval", "rollup=200ms", "maps=250ms", "cgroup=250ms", "residency=200ms",
              "--", npy});
    return db;
}

std::string make_killed_recording(const std::string& dir, const std::string& npy) {
    const std::string cli = cli_path(), db = dir + "/killed.db", wal = db + "-wal";
    const std::string live = dir + "/live";
    fs::create_directories(live);
    const std::string live_db = live + "/killed.db";
    {
        Child recorder({cli,           "record",     "-q",           "-o",
                        live_db,       "--interval", "rollup=200ms", "residency=200ms",
                        "--",          cli,          "load",         "-q",
                        "--workers",   "2",          "--epochs",     "20",
                        "--step-time", "20ms",       "--",           npy});
        const auto start = std::chrono::steady_clock::now();
        std::error_code error;
        while (std::chrono::steady_clock::now() - start < 1500ms ||
               fs::file_size(live_db + "-wal", error) < 16384 || error) {
            BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() - start < 20s,
                                  "fuzz setup: the recording's -wal never grew");
            std::this_thread::sleep_for(50ms);
        }
        kill(recorder.pid(), SIGKILL);
        BOOST_REQUIRE(recorder.wait(5s).has_value());
        kill(-recorder.pid(), SIGKILL); // the loader, in the recorder's process group
    }
    fs::copy_file(live_db, db);
    fs::copy_file(live_db + "-wal", wal);
    fs::remove_all(live);
    BOOST_REQUIRE_MESSAGE(fs::file_size(wal) > 0, "fuzz setup: the killed recording has no WAL");
    return db;
}

void announce_seeds(const std::string& suite, const std::vector<std::uint64_t>& seeds) {
    std::string text = suite + ": seeds";
    for (auto seed : seeds)
        text += " " + seed_text(seed);
    text += " (the last one drawn for this run unless LOADERLENS_FUZZ_SEED is set; replay one "
            "with LOADERLENS_FUZZ_SEED=SEED [LOADERLENS_FUZZ_CASE=N] "
            "[LOADERLENS_FUZZ_KEEP=DIR] loaderlens_tests --run_test=" +
            suite + ")";
    BOOST_TEST_MESSAGE(text);
    std::cout << text << std::endl;
}

void run_cases(FuzzRunner& runner, std::uint64_t seed, std::size_t count,
               const std::function<FuzzCase(std::size_t, const std::string&)>& make,
               const std::string& scratch, std::vector<std::string>& failures, std::size_t chunk) {
    const auto only = fuzz_only_case();
    for (std::size_t first = 0; first < count; first += chunk) {
        const std::string dir = scratch + "/chunk";
        fs::remove_all(dir);
        fs::create_directories(dir);
        fs::permissions(dir, fs::perms::all, fs::perm_options::add);
        std::vector<FuzzCase> cases;
        for (std::size_t index = first; index < std::min(count, first + chunk); ++index) {
            if (only && *only != index) continue;
            const std::string case_dir = dir + "/" + std::to_string(index);
            fs::create_directories(case_dir);
            fs::permissions(case_dir, fs::perms::all, fs::perm_options::add);
            try {
                cases.push_back(make(index, case_dir));
            } catch (const std::exception& e) {
                failures.push_back("fuzz case failed: seed " + seed_text(seed) + " case " +
                                   std::to_string(index) + ": its generator threw: " + e.what());
            }
        }
        for (auto& message : runner.run(cases))
            failures.push_back(std::move(message));
        // A case may leave a read-only directory (WalDamage): give it back its permissions.
        std::error_code error;
        for (const auto& entry : fs::recursive_directory_iterator(dir, error))
            if (entry.is_directory(error))
                fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, error);
        fs::remove_all(dir, error);
    }
}

void report_run(const std::string& suite, const FuzzRunner& runner,
                const std::vector<std::string>& failures, double seconds) {
    char summary[512];
    std::snprintf(summary, sizeof summary,
                  "%s: %zu generated cases, %zu commands in %.1f s, %zu failed; slowest command "
                  "%.2f s: ",
                  suite.c_str(), runner.cases_run(), runner.commands_run(), seconds,
                  failures.size(), runner.slowest_seconds());
    std::cout << summary << runner.slowest_command() << std::endl;
    BOOST_TEST_MESSAGE(summary << runner.slowest_command());
    // Every failure is an error; the first ones in full (a broken build would print thousands).
    const char* show = std::getenv("LOADERLENS_FUZZ_SHOW");
    const std::size_t in_full = show && *show ? std::strtoul(show, nullptr, 10) : 60;
    std::size_t shown = 0;
    for (const auto& failure : failures) {
        if (++shown <= in_full) {
            BOOST_ERROR(failure);
        } else {
            BOOST_ERROR(
                "fuzz case failed (details left out after " + std::to_string(in_full) +
                "; LOADERLENS_FUZZ_SHOW=N shows more): " + failure.substr(0, failure.find('\n')));
        }
    }
}

} // namespace loaderlens::test
