// SPDX-License-Identifier: MIT
// Fuzz: damaged datasets through `load` (few samples, 0-2 workers, 1-2 epochs, each read mode)
// and, every fifth case, `replay`. Good .npy, raw, LMDB and HDF5 datasets are made once per run;
// each case damages a copy (NpyDamage, LmdbDamage, Hdf5Damage, raw sizes that are no multiple of
// the record).
// Every command must end within 10 s in exit 0 or one line naming the dataset with exit 2 (a
// dataset that is not what it claims), never a signal (SIGBUS from a cut map, SIGSEGV in libhdf5),
// and leave the dataset as it was. Seeds 1 and 2 plus one drawn per run (under ASan: 1 and the
// drawn one, half as many cases each).
#include "fuzz_file_edit.hpp"
#include "fuzz_hdf5_damage.hpp"
#include "fuzz_lmdb_damage.hpp"
#include "fuzz_npy_damage.hpp"
#include "fuzz_suite.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>

using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

// Per seed (fewer under ASan, where a process starts in 0.2 s).
constexpr std::size_t npy_cases = fuzz_sanitized ? 35 : 70; // 5 (10) of each NpyDamage kind
constexpr std::size_t raw_cases = fuzz_sanitized ? 7 : 14;
constexpr std::size_t lmdb_cases = fuzz_sanitized ? 32 : 64; // 4 (8) of each LmdbDamage kind
constexpr std::size_t hdf5_cases = fuzz_sanitized ? 30 : 60; // 3 (6) of each Hdf5Damage kind

enum class Format { npy, raw, lmdb, hdf5 };

// The commands a damaged dataset goes through.
std::vector<FuzzCommand> dataset_commands(FuzzRandom& random, Format format,
                                          const std::string& dataset, const std::string& out_dir,
                                          bool with_replay, const std::string& record_size) {
    const std::string cli = fuzz_cli();
    std::vector<std::string> options{"--workers", std::to_string(random.below(3)),
                                     "--epochs",  std::to_string(random.between(1, 2)),
                                     "--batch",   std::to_string(random.pick<int>({1, 8, 16, 64}))};
    if (format == Format::hdf5) {
        options.insert(options.end(),
                       {"--hdf5-open", random.pick<std::string>({"parent", "worker"}),
                        "--chunk-cache", random.pick<std::string>({"0", "1MiB", "16MiB"})});
    } else if (format == Format::lmdb) {
        options.insert(options.end(),
                       {"--read", random.pick<std::string>({"mmap-view", "mmap-copy"}),
                        "--lmdb-open", random.pick<std::string>({"parent", "worker"}),
                        "--readahead", random.pick<std::string>({"on", "off"})});
    } else {
        options.insert(options.end(),
                       {"--read", random.pick<std::string>({"mmap-view", "mmap-copy", "pread"})});
    }
    if (format == Format::raw) options.insert(options.end(), {"--record-size", record_size});
    const bool json = random.percent(50);
    FuzzCommand load;
    load.argv = {cli, "load", json ? "--json" : "-q"};
    load.argv.insert(load.argv.end(), options.begin(), options.end());
    load.argv.insert(load.argv.end(), {"--", dataset});
    load.output = json ? FuzzOutput::json : FuzzOutput::any;
    load.names = {dataset};
    std::vector<FuzzCommand> commands{load};
    if (with_replay) {
        FuzzCommand replay;
        replay.argv = {cli,         "replay", "-q",       "-o", out_dir + "/replay.db",
                       "--workers", "1",      "--epochs", "1",  "--batch",
                       "16"};
        if (format == Format::raw)
            replay.argv.insert(replay.argv.end(), {"--record-size", record_size});
        replay.argv.insert(replay.argv.end(), {"--", dataset});
        replay.names = {dataset};
        commands.push_back(replay);
    }
    return commands;
}

Damage raw_damage(FuzzRandom& random, const std::string& good, std::uint64_t record,
                  const std::string& target) {
    const std::string bytes = read_bytes(good);
    const std::uint64_t size = random.pick<std::uint64_t>(
        {0, 1, record - 1, record + 1, bytes.size() - 1, bytes.size() + 1, record / 2,
         bytes.size() + record - 1, random.below(bytes.size())});
    write_bytes(target, bytes.substr(0, std::min<std::uint64_t>(size, bytes.size())) +
                            std::string(size > bytes.size() ? size - bytes.size() : 0, 'x'));
    return {"raw file of " + std::to_string(size) + " bytes (records of " + std::to_string(record) +
                ")",
            "truncate -s " + std::to_string(size) + " good.raw"};
}

} // namespace

BOOST_AUTO_TEST_SUITE(fuzz_datasets)

BOOST_AUTO_TEST_CASE(damaged_datasets_end_in_a_run_or_one_line) {
    const auto started = std::chrono::steady_clock::now();
    TempDir dir;
    const GoodDatasets good = make_good_datasets(dir.file(""));
    const NpyDamage npy(good.npy);
    const LmdbDamage lmdb(good.lmdb);
    const Hdf5Damage hdf5(dir.file(""));
    const std::uint64_t record = std::stoull(good.raw_record_size);
    const auto seeds = fuzz_sanitized ? fuzz_seeds({1}) : fuzz_seeds({1, 2});
    announce_seeds("fuzz_datasets", seeds);
    const std::string scratch = dir.file("scratch");
    fs::create_directories(scratch);
    FuzzRunner runner(scratch);
    std::vector<std::string> failures;
    for (const std::uint64_t seed : seeds) {
        run_cases(
            runner, seed, npy_cases + raw_cases + lmdb_cases + hdf5_cases,
            [&](std::size_t index, const std::string& case_dir) {
                FuzzRandom random = FuzzRandom::for_case(seed, index);
                FuzzCase fuzz_case;
                fuzz_case.seed = seed;
                fuzz_case.index = index;
                Format format = Format::npy;
                std::string target;
                Damage damage;
                if (index < npy_cases) {
                    target = case_dir + "/good.npy";
                    damage = npy.make(index, random, target);
                    fuzz_case.unchanged = {target};
                } else if (index < npy_cases + raw_cases) {
                    format = Format::raw;
                    target = case_dir + "/good.raw";
                    damage = raw_damage(random, good.raw, record, target);
                    fuzz_case.unchanged = {target};
                } else if (index >= npy_cases + raw_cases + lmdb_cases) {
                    format = Format::hdf5;
                    target = case_dir + "/good.h5";
                    damage = hdf5.make(index - npy_cases - raw_cases - lmdb_cases, random, target);
                    fuzz_case.unchanged = {target};
                } else {
                    format = Format::lmdb;
                    target = case_dir + "/env";
                    damage = lmdb.make(index - npy_cases - raw_cases, random, target);
                    fuzz_case.unchanged = {target + "/data.mdb"};
                }
                fuzz_case.damage = damage.description;
                fuzz_case.reproducer = damage.reproducer;
                fuzz_case.keep = {target};
                fuzz_case.commands = dataset_commands(random, format, target, case_dir,
                                                      index % 5 == 0, good.raw_record_size);
                return fuzz_case;
            },
            scratch, failures);
    }
    report_run("fuzz_datasets", runner, failures,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

BOOST_AUTO_TEST_SUITE_END()
