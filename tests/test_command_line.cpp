// SPDX-License-Identifier: MIT
// Everything after the first -- belongs to the wrapped command, whatever option precedes it: a
// training script's own flags must never change the recording or stop the job.
#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A command that writes its own arguments, one per line, to `out`, and has flags that are also
// loaderlens's: -o, -q, --force, --pid, --file.
std::vector<std::string> echo_arguments(const std::string& out) {
    return {"sh", "-c",      "printf '%s\\n' \"$@\" > " + out,
            "sh", "-o",      "theirs.db",
            "-q", "--force", "--pid",
            "1",  "--file",  "x"};
}
const char* echoed = "-o\ntheirs.db\n-q\n--force\n--pid\n1\n--file\nx\n";

// `record` with `options` right before "--", then the command.
RunResult record_with(const std::vector<std::string>& options, const std::string& output,
                      const std::vector<std::string>& command) {
    std::vector<std::string> argv{cli_path(), "record", "-o", output};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return run(argv);
}

} // namespace

BOOST_AUTO_TEST_SUITE(command_line)

// Each option that takes one or more values, placed right before "--": CLI11 ends a multi-value
// option's values at "--" and then parsed the command's own -c/-o/... as loaderlens's.
BOOST_AUTO_TEST_CASE(options_right_before_dashes_leave_the_command_alone) {
    TempDir dir;
    const std::string data = dir.file("data.bin");
    make_file(data, 1 << 20);
    const std::vector<std::vector<std::string>> cases{
        {"--interval", "fast=100ms"},
        {"--interval", "fast=100ms", "rollup=1s"},
        {"--file", data},
        {"--file", data, "--file", data},
        {"--residency-buckets", "8"},
        {"--residency-min-size", "1MiB"},
        {"--residency-method", "mincore"},
        {"-q"},
        {"--worker-match", "nothing"},
    };
    int n = 0;
    for (const auto& options : cases) {
        const std::string output = dir.file("run" + std::to_string(n) + ".db");
        const std::string echoed_to = dir.file("args" + std::to_string(n++));
        BOOST_TEST_CONTEXT("options: " << options.front() << " ... (" << options.size() << ")") {
            RunResult result = record_with(options, output, echo_arguments(echoed_to));
            BOOST_TEST(result.exit_code == 0, result.err);
            BOOST_TEST(slurp(echoed_to) == echoed);
            BOOST_REQUIRE(std::filesystem::exists(output));
            Recording recording(output);
            BOOST_TEST(recording.meta("command").find("-o theirs.db -q --force --pid 1") !=
                       std::string::npos);
        }
    }
    // The command's -o/--force never reached loaderlens: no recording under its name.
    BOOST_TEST(!std::filesystem::exists("theirs.db"));
    BOOST_TEST(!std::filesystem::exists(dir.file("theirs.db")));
}

// `sh -c 'echo hi'`, the first report, verbatim.
BOOST_AUTO_TEST_CASE(sh_dash_c_after_an_interval) {
    TempDir dir;
    RunResult result = run({cli_path(), "record", "-q", "-o", dir.file("a.db"), "--interval",
                            "fast=100ms", "--", "sh", "-c", "echo hi"});
    BOOST_TEST(result.exit_code == 0, result.err);
    BOOST_TEST(result.out == "hi\n");
}

// A second "--" is the command's own.
BOOST_AUTO_TEST_CASE(only_the_first_dashes_are_ours) {
    TempDir dir;
    const std::string out = dir.file("args");
    RunResult result = run({cli_path(), "record", "-q", "-o", dir.file("a.db"), "--", "sh", "-c",
                            "printf '%s\\n' \"$@\" > " + out, "sh", "--", "-o", "--"});
    BOOST_TEST(result.exit_code == 0, result.err);
    BOOST_TEST(slurp(out) == "--\n-o\n--\n");
}

// The command given on both sides of "--" is ambiguous: one line, exit 2, nothing run.
BOOST_AUTO_TEST_CASE(command_on_both_sides_is_refused) {
    TempDir dir;
    const std::string marker = dir.file("ran");
    RunResult result =
        run({cli_path(), "record", "-q", "-o", dir.file("a.db"), "touch", "--", marker});
    BOOST_TEST(result.exit_code == 2);
    BOOST_TEST(result.err.find("after --") != std::string::npos, result.err);
    BOOST_TEST(!std::filesystem::exists(marker));
    BOOST_TEST(!std::filesystem::exists(dir.file("a.db")));
}

// replay's dataset after "--", named like an option, with a multi-value option before "--".
BOOST_AUTO_TEST_CASE(replay_dataset_after_dashes) {
    TempDir dir;
    const std::string dataset = dir.file("-weird.npy");
    RunResult made =
        run({cli_path(), "mkdata", "npy", "--count", "64", "--shape", "16", "--", dataset});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    BOOST_REQUIRE(std::filesystem::exists(dataset));
    const std::string output = dir.file("replay.db");
    RunResult result =
        run({cli_path(), "replay", "-q", "-o", output, "--workers", "2", "--batch", "8",
             "--interval", "fast=100ms", "rollup=200ms", "--file", dataset, "--", dataset});
    BOOST_TEST(result.exit_code == 0, result.err);
    BOOST_REQUIRE(std::filesystem::exists(output));
    Recording recording(output);
    BOOST_TEST(recording.loader_run().epochs.size() == 1u);
    // load and report take theirs the same way.
    BOOST_TEST(run({cli_path(), "load", "-q", "--workers", "1", "--", dataset}).exit_code == 0);
    RunResult report = run({cli_path(), "report", "--", output});
    BOOST_TEST(report.exit_code == 0, report.err);
    BOOST_TEST(report.out.find("loaderlens report") != std::string::npos);
}

// Arguments after "--" for a subcommand that takes none: one line, exit 2.
BOOST_AUTO_TEST_CASE(dashes_where_nothing_is_expected) {
    RunResult result = run({cli_path(), "--", "x"});
    BOOST_TEST(result.exit_code == 2);
    BOOST_TEST(std::count(result.err.begin(), result.err.end(), '\n') == 1, result.err);
}

// A typo in a command or an option: one line, exit 2, naming what was meant (issue 30); a word
// far from every name gets the list, never a guess.
BOOST_AUTO_TEST_CASE(typos_get_what_was_meant) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"reprot", "run.db"}, "'reprot' is not a command (did you mean 'report'?)"},
        {{"chekc", "run.db"}, "(did you mean 'check'?)"},
        {{"report", "--jsno", "run.db"}, "--jsno (did you mean --json?)"},
        {{"record", "--outptu", "x.db", "--", "true"}, "(did you mean --output?)"},
        // An option of an option group (the reference loader's, under replay and check replay).
        {{"check", "replay", "--workerz", "2", "d.npy"}, "(did you mean --workers?)"},
        {{"frobnicate"}, "'frobnicate' is not a command; the commands: record, report"},
        {{}, "a command is needed: record, report"}};
    for (const auto& [words, wanted] : cases) {
        std::vector<std::string> argv{cli_path()};
        argv.insert(argv.end(), words.begin(), words.end());
        RunResult result = run(argv);
        BOOST_TEST(result.exit_code == 2, result.err);
        BOOST_TEST(std::count(result.err.begin(), result.err.end(), '\n') == 1, result.err);
        BOOST_TEST(result.err.find(wanted) != std::string::npos, result.err << " lacks " << wanted);
    }
    RunResult far = run({cli_path(), "report", "--zzzzzzzz", "run.db"});
    BOOST_TEST(far.exit_code == 2);
    BOOST_TEST(far.err.find("did you mean") == std::string::npos, far.err);
}

BOOST_AUTO_TEST_SUITE_END()
