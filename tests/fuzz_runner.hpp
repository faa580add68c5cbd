// SPDX-License-Identifier: MIT
// The fuzz suites' runner: runs the CLI on generated inputs, two commands at a time, each killed
// after 10 s, and judges every outcome against docs/cli.md's exit-code table: exit 0 with valid
// output, or exactly one line on stderr that names the input with a documented code; never a
// signal, a hang, a sanitizer report or C++ exception text; no input changed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace loaderlens::test {

// Whether the tests (and so the CLI, built alike) run under AddressSanitizer: there a process
// starts in ~0.2 s instead of ~0.01 s, and the suites run fewer commands (docs/testing.md).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool fuzz_sanitized = true;
#else
inline constexpr bool fuzz_sanitized = false;
#endif

// What the output of a command that exits 0 must be.
enum class FuzzOutput {
    any,       // anything (stdout may be empty)
    text,      // some text on stdout
    json,      // one JSON document on stdout
    csv,       // CSV on stdout: a header, then rows of as many fields (RFC 4180 quoting)
    json_file, // one JSON document in FuzzCommand::output_file
};

// Which outcomes are right for a command.
enum class FuzzExpect {
    succeed_or_refuse, // exit 0 with valid output, or a clean refusal
    refuse,            // a clean refusal (the input is not acceptable)
    succeed,           // exit 0 with valid output (a control case: nothing is wrong with it)
};

struct FuzzCommand {
    std::vector<std::string> argv;
    FuzzOutput output = FuzzOutput::any;
    std::string output_file; // for FuzzOutput::json_file
    FuzzExpect expect = FuzzExpect::succeed_or_refuse;
    // A clean refusal: one of these exit codes and exactly one line on stderr that holds one of
    // `names` (the input: file, dataset or option; not checked when empty).
    std::vector<int> refusal_codes{2};
    // Exit codes of a run that went well and has a verdict (advise: 3, no setting fits; check: 3,
    // a rule failed): judged as exit 0 is, and not a refusal.
    std::vector<int> verdict_codes;
    std::vector<std::string> names;
    bool as_nobody = false;     // run as user nobody (only when the test runs as root)
    bool stdout_closed = false; // stdout is a pipe nobody reads (`loaderlens export | head -0`)
};

// One generated input and the commands run on it.
struct FuzzCase {
    std::uint64_t seed = 0;
    std::size_t index = 0;
    std::string damage;     // what was done to the good input, in words
    std::string reproducer; // shell lines that do it again (on the suite's base input)
    std::vector<FuzzCommand> commands;
    std::vector<std::string> unchanged; // files no command may change, create or remove
    std::string no_new_files_in;        // a directory where no command may create a file
    std::vector<std::string> keep;      // copied into $LOADERLENS_FUZZ_KEEP if the case fails
};

class FuzzRunner {
  public:
    // `scratch`: an existing directory for the captured output (and the commands' working
    // directory, where a default output name lands).
    explicit FuzzRunner(std::string scratch, int parallel = 2,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

    // Runs every command of every case; returns one message per failure, each naming the seed,
    // the case index, the damage, its reproducer and the command line.
    std::vector<std::string> run(const std::vector<FuzzCase>& cases);

    std::size_t commands_run() const { return commands_run_; }
    std::size_t cases_run() const { return cases_run_; }
    // The longest a command took, and which one (to see how far from the 10 s limit a run is).
    double slowest_seconds() const { return slowest_seconds_; }
    const std::string& slowest_command() const { return slowest_command_; }

  private:
    struct Slot;
    void start(Slot& slot);
    void finish(Slot& slot, int status, bool timed_out);

    std::string scratch_;
    int parallel_;
    std::chrono::milliseconds timeout_;
    std::vector<std::string> environment_;
    std::size_t commands_run_ = 0, cases_run_ = 0;
    double slowest_seconds_ = 0;
    std::string slowest_command_;
};

// The CLI under test: $LOADERLENS_FUZZ_CLI when set (an older build, say, to see what the suites
// find in it), else the one built with the tests (which also makes the suites' good inputs).
std::string fuzz_cli();

// A command line as a shell would take it back (the CLI's path shown as `loaderlens`).
std::string shell_line(const std::vector<std::string>& argv);
// A file name or text quoted for a shell.
std::string shell_quote(const std::string& text);

} // namespace loaderlens::test
