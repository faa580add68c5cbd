// SPDX-License-Identifier: MIT
// Fuzz: damaged recordings through every command that reads one (report, report --json, export
// in each format). A good replay recording and a killed one (data in its -wal, no -shm) are made
// once per run; each case damages a copy (RecordingDamage, WalDamage). Every command must end
// within 10 s in exit 0 with valid output or one line naming the file with exit 2, and leave the
// file as it was (FuzzRunner). Seeds 1 and 2 plus one drawn per run; seed 1 also sweeps the
// schema (every table dropped, every column dropped, every meta value made non-numeric). Under
// ASan: seed 1 and the drawn one, each case through one of the commands in turn.
#include "fuzz_recording_damage.hpp"
#include "fuzz_suite.hpp"
#include "fuzz_wal_damage.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>

using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t random_cases_per_seed = 128; // 8 of each RecordingDamage kind
constexpr std::size_t wal_cases_per_seed = 27;     // 3 of each WalDamage kind

FuzzCase recording_case(std::uint64_t seed, std::size_t index, const Damage& damage,
                        const std::string& recording, const std::string& dir) {
    FuzzCase fuzz_case;
    fuzz_case.seed = seed;
    fuzz_case.index = index;
    fuzz_case.damage = damage.description;
    fuzz_case.reproducer = damage.reproducer;
    const std::string out = dir + "-out";
    fs::create_directories(out);
    fs::permissions(out, fs::perms::all, fs::perm_options::add);
    fuzz_case.commands = recording_commands(recording, out + "/export.json");
    // Under ASan (a process starts in 0.2 s) each case runs one of the reading commands, in turn.
    if (fuzz_sanitized)
        fuzz_case.commands = {fuzz_case.commands[index % fuzz_case.commands.size()]};
    fuzz_case.unchanged = {recording, recording + "-wal"};
    fuzz_case.no_new_files_in = dir;
    fuzz_case.keep = {recording};
    if (fs::exists(recording + "-wal")) fuzz_case.keep.push_back(recording + "-wal");
    return fuzz_case;
}

} // namespace

BOOST_AUTO_TEST_SUITE(fuzz_recordings)

BOOST_AUTO_TEST_CASE(damaged_recordings_end_in_a_report_or_one_line) {
    const auto started = std::chrono::steady_clock::now();
    TempDir dir;
    fs::permissions(dir.path(), fs::perms::all, fs::perm_options::add); // nobody's cases
    const std::string good = make_good_recording(dir.file(""));
    const std::string killed = make_killed_recording(dir.file(""), dir.file("small.npy"));
    const RecordingDamage damage(good);
    const WalDamage wal_damage(killed);
    const auto seeds = fuzz_sanitized ? fuzz_seeds({1}) : fuzz_seeds({1, 2});
    announce_seeds("fuzz_recordings", seeds);
    const std::string scratch = dir.file("scratch");
    fs::create_directories(scratch);
    FuzzRunner runner(scratch);
    std::vector<std::string> failures;
    for (const std::uint64_t seed : seeds) {
        const std::size_t sweep = seed == 1 ? damage.sweep_size() : 0;
        const std::size_t total = sweep + random_cases_per_seed + wal_cases_per_seed;
        run_cases(
            runner, seed, total,
            [&](std::size_t index, const std::string& case_dir) {
                FuzzRandom random = FuzzRandom::for_case(seed, index);
                if (index < sweep + random_cases_per_seed) {
                    const std::string target = case_dir + "/good.db";
                    const Damage made = index < sweep ? damage.make_sweep(index, target)
                                                      : damage.make(index - sweep, random, target);
                    return recording_case(seed, index, made, target, case_dir);
                }
                const std::size_t kind = index - sweep - random_cases_per_seed;
                const WalDamage::Made made = wal_damage.make(kind, random, case_dir, "killed.db");
                FuzzCase fuzz_case =
                    recording_case(seed, index, made.damage, case_dir + "/killed.db", case_dir);
                for (auto& command : fuzz_case.commands) {
                    command.as_nobody = made.as_nobody;
                    if (made.control) command.expect = FuzzExpect::succeed;
                }
                return fuzz_case;
            },
            scratch, failures);
    }
    // The control: the good recording itself reads cleanly (else every refusal above is moot).
    FuzzCase control =
        recording_case(0, 0, {"none (the good recording)", "-"}, good, dir.file("control"));
    control.commands = recording_commands(good, dir.file("control-out") + "/export.json");
    for (auto& command : control.commands)
        command.expect = FuzzExpect::succeed;
    control.no_new_files_in.clear();
    for (auto& message : runner.run({control}))
        failures.push_back(std::move(message));
    report_run("fuzz_recordings", runner, failures,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

BOOST_AUTO_TEST_SUITE_END()
