// SPDX-License-Identifier: MIT
// Hostile option values for every command: each numeric option just outside its range, far
// outside it (2^63, 1e12, -1 for an unsigned seed), not a number, empty; output names with control
// characters. Each must end in exit 2 with exactly one line on stderr naming the option, before
// anything runs or is written. Values at the ends of a range run as given, never clamped.
#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <set>

using namespace loaderlens;
using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

struct HostileValue {
    std::string option; // what the error line must name
    std::vector<std::string> arguments;
};

// For load and replay (the loader's flags) over a 64-record dataset.
const std::vector<HostileValue> loader_values{
    {"--seed", {"--seed", "-1"}},
    {"--seed", {"--seed", "18446744073709551616"}},
    {"--seed", {"--seed", "99999999999999999999999"}},
    {"--seed", {"--seed", "0x10"}},
    {"--seed", {"--seed", ""}},
    {"--batch", {"--batch", "9223372036854775808"}},
    {"--batch", {"--batch", "9223372036854775807"}},
    {"--batch", {"--batch", "16777217"}},
    {"--batch", {"--batch", "0"}},
    {"--batch", {"--batch", "-1"}},
    {"--batch", {"--batch", "1e3"}},
    {"--batch", {"--batch", ""}},
    {"--epochs", {"--epochs", "0"}},
    {"--epochs", {"--epochs", "2147483648"}},
    {"--epochs", {"--epochs", "1000001"}},
    {"--num-samples", {"--pattern", "random", "--num-samples", "1000000000000"}},
    {"--num-samples", {"--pattern", "random", "--num-samples", "1e12"}},
    {"--num-samples", {"--pattern", "random", "--num-samples", "-1"}},
    {"--world", {"--pattern", "distributed", "--world", "1000000000"}},
    {"--world", {"--pattern", "distributed", "--world", "1e9"}},
    {"--world", {"--pattern", "distributed", "--world", "65"}}, // more ranks than records
    {"--world", {"--pattern", "distributed", "--world", "0"}},
    {"--rank", {"--pattern", "distributed", "--world", "2", "--rank", "2"}},
    {"--rank", {"--pattern", "distributed", "--rank", "-1"}},
    {"--workers", {"--workers", "-1"}},
    {"--workers", {"--workers", "4097"}},
    {"--workers", {"--workers", "99999999999"}},
    {"--prefetch", {"--prefetch", "0"}},
    {"--prefetch", {"--prefetch", "4097"}},
    {"--shard-size", {"--pattern", "shards", "--shard-size", "-1"}},
    {"--shard-size", {"--pattern", "shards", "--shard-size", "9223372036854775807"}},
    {"--window", {"--pattern", "windows", "--window", "-1"}},
    {"--window", {"--pattern", "windows", "--window", "4611686018427387904"}},
    {"--cow-heap", {"--cow-heap", "-1"}},
    {"--cow-heap", {"--cow-heap", "1048577"}},
    {"--step-time", {"--step-time", "1e300"}},
    {"--step-time", {"--step-time", "-1ms"}},
    {"--step-time", {"--step-time", "nan"}},
    {"--epoch-pause", {"--epoch-pause", "inf"}},
    {"--subset", {"--subset", "nan"}},
    {"--subset", {"--subset", "2"}},
    {"--zipf-s", {"--pattern", "zipf", "--zipf-s", "nan"}},
    {"--zipf-s", {"--pattern", "zipf", "--zipf-s", "-1"}},
    {"--record-size", {"--record-size", "0"}},
};

// For record and replay (the recording's options).
const std::vector<HostileValue> recording_values{
    {"--cpu-budget", {"--cpu-budget", "1e-300"}},
    {"--cpu-budget", {"--cpu-budget", "0.0009"}},
    {"--cpu-budget", {"--cpu-budget", "0"}},
    {"--cpu-budget", {"--cpu-budget", "101%"}},
    {"--cpu-budget", {"--cpu-budget", "nan%"}},
    {"--maps-min-size", {"--maps-min-size", "-1"}},
    {"--maps-min-size", {"--maps-min-size", "4611686018427387904"}},
    {"--maps-min-size", {"--maps-min-size", "1e3"}},
    {"--residency-buckets", {"--residency-buckets", "0"}},
    {"--residency-buckets", {"--residency-buckets", "65537"}},
    {"--residency-buckets", {"--residency-buckets", "4294967297"}},
    {"--residency-min-size", {"--residency-min-size", "0"}},
    {"--residency-min-size", {"--residency-min-size", "1e300"}},
    {"--interval", {"--interval", "fast=0ms"}},
    {"--interval", {"--interval", "fast=1e300s"}},
    {"--interval", {"--interval", "maps=-1s"}},
};

const std::vector<HostileValue> record_only_values{
    {"--pid", {"--pid", "-1"}},
    {"--pid", {"--pid", "99999999999"}},
    {"--pid", {"--pid", "1e3"}},
    // std::regex takes it, the POSIX matcher the recorder uses does not: refused up front.
    {"--worker-match", {"--worker-match", "(?=x)"}},
    {"--worker-match", {"--worker-match", "(a"}},
};

const std::vector<HostileValue> mkdata_values{
    {"--count", {"--count", "0"}},
    {"--count", {"--count", "-1"}},
    {"--count", {"--count", "1e3"}},
    {"--count", {"--count", "99999999999999999999"}},
    {"--seed", {"--count", "2", "--seed", "-1"}},
    {"--seed", {"--count", "2", "--seed", "18446744073709551616"}},
    {"--npy-version", {"--count", "2", "--npy-version", "0"}},
    {"--npy-version", {"--count", "2", "--npy-version", "4"}},
    {"--npy-version", {"--count", "2", "--npy-version", "0x2"}},
    {"--size", {"--size", "0"}},
    {"--size", {"--size", "1e300"}},
    {"--shape", {"--count", "2", "--shape", "3x0"}},
    {"--shape", {"--count", "2", "--shape", "99999999999999x99999999999999"}},
};

std::vector<std::string> with(std::vector<std::string> argv, const std::vector<std::string>& more) {
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
}

// Runs argv and checks: exit 2, exactly one line on stderr, naming `option`.
void expect_refused(const std::vector<std::string>& argv, const std::string& option) {
    std::string shown;
    for (std::size_t i = 1; i < argv.size(); ++i)
        shown += " '" + argv[i] + "'";
    auto result = run(argv, std::chrono::seconds(10));
    BOOST_TEST(result.exit_code == 2, shown << ": exit " << result.exit_code << ", " << result.err);
    BOOST_TEST(lines_of(result.err).size() == 1u, shown << ": stderr " << result.err);
    BOOST_TEST(mentions(result.err, option), shown << ": " << result.err);
}

std::set<std::string> names_in(const fs::path& directory) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory))
        names.insert(entry.path().filename().string());
    return names;
}

struct Dataset {
    TempDir dir;
    std::string npy = dir.file("small.npy");
    Dataset() {
        auto made = run({cli_path(), "mkdata", "npy", npy, "--count", "64", "--shape", "16"});
        BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_options)

BOOST_AUTO_TEST_CASE(loader_flags_out_of_range_are_one_line_exit_2) {
    Dataset data;
    for (const HostileValue& value : loader_values) {
        expect_refused(with({cli_path(), "load", data.npy, "--workers", "0"}, value.arguments),
                       value.option);
        const std::string out = data.dir.file("r.db");
        expect_refused(with({cli_path(), "replay", "-q", "-o", out, data.npy}, value.arguments),
                       value.option);
        BOOST_TEST(!fs::exists(out), value.option << ": replay made a recording");
    }
}

BOOST_AUTO_TEST_CASE(recording_options_out_of_range_are_one_line_exit_2) {
    Dataset data;
    const std::string out = data.dir.file("r.db");
    for (const HostileValue& value : recording_values) {
        expect_refused(
            with(with({cli_path(), "record", "-q", "-o", out}, value.arguments), {"--", "true"}),
            value.option);
        expect_refused(with({cli_path(), "replay", "-q", "-o", out, data.npy}, value.arguments),
                       value.option);
    }
    for (const HostileValue& value : record_only_values)
        expect_refused(
            with(with({cli_path(), "record", "-q", "-o", out}, value.arguments), {"--", "true"}),
            value.option);
    BOOST_TEST(!fs::exists(out));
}

BOOST_AUTO_TEST_CASE(mkdata_options_out_of_range_are_one_line_exit_2) {
    TempDir dir;
    for (const HostileValue& value : mkdata_values)
        expect_refused(with({cli_path(), "mkdata", "npy", dir.file("d.npy")}, value.arguments),
                       value.option);
    expect_refused(
        {cli_path(), "mkdata", "raw", dir.file("d.raw"), "--count", "2", "--record-size", "0"},
        "--record-size");
    expect_refused(
        {cli_path(), "mkdata", "lmdb", dir.file("d.lmdb"), "--count", "2", "--value-size", "1e300"},
        "--value-size");
    BOOST_TEST(names_in(dir.path()).empty());
}

// A newline (or any control character) in an output name would split every message naming the
// file; such names are refused before anything is written.
BOOST_AUTO_TEST_CASE(output_names_with_control_characters_are_refused) {
    Dataset data;
    const std::string recording = data.dir.file("run.db");
    BOOST_REQUIRE(run({cli_path(), "record", "-q", "-o", recording, "--", "true"}).exit_code == 0);
    const auto before = names_in(data.dir.path());
    for (const std::string bad : {"a\nb", "a\tb", "a\x1b[2Jb", "a\rb", "a\x7f"}) {
        const std::string out = data.dir.file(bad + ".db");
        expect_refused({cli_path(), "record", "-q", "-o", out, "--", "true"}, "-o");
        expect_refused({cli_path(), "replay", "-q", "-o", out, data.npy}, "-o");
        expect_refused({cli_path(), "export", "-o", out, recording}, "-o");
        expect_refused({cli_path(), "mkdata", "npy", out, "--count", "2"}, "control character");
    }
    BOOST_TEST((names_in(data.dir.path()) == before), "a file was created");
}

// A file or dataset name that starts with '-' is taken for an option; CLI11 would then only say
// that the file is required (found by fuzz_options: `report -qs...`). The line names what was
// written instead, and how to write such a name.
BOOST_AUTO_TEST_CASE(a_name_that_looks_like_an_option_is_named) {
    struct Case {
        std::vector<std::string> arguments;
        std::string named; // as the error line writes it
    };
    const std::vector<Case> cases{
        {{"report", "-zz"}, "-zz"},
        {{"report", "--json", "-\xbb>"}, "-\xbb>"},
        {{"export", "-x1"}, "-x1"},
        {{"load", "-qs"}, "-s in -qs"},
        {{"mkdata", "npy", "-d", "--count", "2"}, "-d"},
        {{"mkdata", "lmdb",
          "-\x08"
          "B",
          "--count", "2"},
         "-\\x08B"},
    };
    for (const Case& c : cases) {
        expect_refused(with({cli_path()}, c.arguments), "unknown option " + c.named);
        expect_refused(with({cli_path()}, c.arguments),
                       "./" + c.named.substr(c.named.find_last_of(' ') + 1));
    }
}

// The ends of the ranges run as given: the largest seed is not clamped or wrapped, the smallest
// CPU budget and a maps threshold of 0 are recorded as asked.
BOOST_AUTO_TEST_CASE(values_at_the_ends_of_a_range_run_as_given) {
    Dataset data;
    const std::string out = data.dir.file("r.db");
    auto replay =
        run({cli_path(), "replay", "-q", "--workers", "0", "--seed", "18446744073709551615",
             "--cpu-budget", "0.1%", "--maps-min-size", "0", "-o", out, data.npy});
    BOOST_REQUIRE_MESSAGE(replay.exit_code == 0, replay.err);
    Recording rec(out);
    BOOST_TEST(rec.meta("command").find(" --seed 18446744073709551615 ") != std::string::npos,
               rec.meta("command"));
    BOOST_TEST(std::stod(rec.meta("cpu_budget")) == 0.001);
}

BOOST_AUTO_TEST_SUITE_END()
