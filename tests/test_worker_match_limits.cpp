// SPDX-License-Identifier: MIT
// --worker-match on hostile input: command lines of megabytes, patterns that make a regex engine
// recurse, backtrack or unroll. std::regex recursed once per character of the command line and
// killed the recorder (SIGSEGV) on a 30 KB one; glibc's POSIX matcher does not recurse on the
// subject, and WorkerMatch bounds what it may cost (docs/workers.md).
#include "loaderlens/recording.hpp"
#include "loaderlens/worker_rule.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <functional>
#include <pthread.h>
#include <regex.h>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// Runs `work` on a thread with a 64 KiB stack: recursion per character of a 1 MiB subject would
// overflow it at once (std::regex took ~270 bytes of stack per character).
void on_small_stack(const std::function<void()>& work) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 << 10);
    pthread_t thread;
    auto call = [](void* argument) -> void* {
        (*static_cast<const std::function<void()>*>(argument))();
        return nullptr;
    };
    BOOST_REQUIRE(
        pthread_create(&thread, &attributes, call, const_cast<std::function<void()>*>(&work)) == 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attributes);
}

const std::string mib_of_a(1 << 20, 'a');

} // namespace

BOOST_AUTO_TEST_SUITE(worker_match)

// The claim the design rests on, checked on glibc itself: no recursion per subject character.
BOOST_AUTO_TEST_CASE(glibc_matches_a_1mib_subject_on_a_64kib_stack) {
    int miss = -1, hit = -1;
    on_small_stack([&] {
        regex_t regex;
        if (regcomp(&regex, ".*worker", REG_EXTENDED | REG_NOSUB) != 0) return;
        miss = regexec(&regex, mib_of_a.c_str(), 0, nullptr, 0);
        hit = regexec(&regex, (mib_of_a + "worker").c_str(), 0, nullptr, 0);
        regfree(&regex);
    });
    BOOST_TEST(miss == REG_NOMATCH);
    BOOST_TEST(hit == 0);
}

BOOST_AUTO_TEST_CASE(matcher_looks_at_the_first_4096_bytes_of_a_1mib_command_line) {
    static_assert(WorkerMatch::subject_bytes == 4096);
    const WorkerMatch match(".*worker");
    bool at_start = false, ends_at_limit = false, past_limit = true, comm = false;
    on_small_stack([&] {
        at_start = match.matches("python worker.py " + mib_of_a);
        ends_at_limit = match.matches(std::string(4090, 'a') + "worker" + mib_of_a);
        past_limit = match.matches(std::string(4091, 'a') + "worker" + mib_of_a);
        comm = match.matches("ll_data_worker");
    });
    BOOST_TEST(at_start);
    BOOST_TEST(ends_at_limit);
    BOOST_TEST(!past_limit);
    BOOST_TEST(comm);
}

// glibc's unanchored search restarts at every position: some patterns cost time quadratic in
// the subject (measured: (a|aa)*b, 0.14 s on 4 KiB, 0.65 s on 8 KiB, hours on 1 MiB). The
// bounded prefix keeps the worst allowed patterns well under a second on any command line.
BOOST_AUTO_TEST_CASE(slow_patterns_stay_bounded_on_a_1mib_command_line) {
    for (const std::string pattern : {"(a|aa)*b", ".{255}x", "(.{1,15}){1,15}x", "(.*a){20}b"}) {
        BOOST_TEST_CONTEXT(pattern) {
            BOOST_REQUIRE(!WorkerMatch::problem(pattern));
            const WorkerMatch match(pattern);
            const auto start = std::chrono::steady_clock::now();
            BOOST_TEST(!match.matches(mib_of_a));
            BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(2)));
        }
    }
}

BOOST_AUTO_TEST_CASE(refused_patterns_say_why_in_one_line) {
    const std::vector<std::pair<std::string, std::string>> refused{
        {std::string(100'000, 'a'), "longer than 256 bytes (100000)"},
        {std::string(257, 'a'), "longer than 256 bytes"},
        {"(a)\\1", "back-references (\\1) are not supported"},
        {"worker\\d+", "\\d is ECMAScript"},
        {"(?:pt|ll)_data_worker", "(?...) is ECMAScript or Perl syntax"},
        {"a{256}", "a repetition count above 255"},
        {"(a{100}){100}", "expands to more than 256 positions"},
        {"((a{16}){16}){16}", "expands to more than 256 positions"},
        {"(((((((((a+)+)+)+)+)+)+)+)+)+", "expands to more than 256 positions"},
        {"(worker", "not a valid POSIX extended regular expression ("},
        {"a{", "not a valid POSIX extended regular expression ("},
        {"[[:nope:]]", "not a valid POSIX extended regular expression ("},
        {std::string("a\0b", 3), "contains a NUL byte"},
    };
    for (const auto& [pattern, reason] : refused) {
        BOOST_TEST_CONTEXT(pattern.substr(0, 40)) {
            const auto problem = WorkerMatch::problem(pattern);
            BOOST_REQUIRE(problem.has_value());
            BOOST_TEST(problem->find(reason) != std::string::npos, *problem);
            BOOST_TEST(problem->find('\n') == std::string::npos);
            BOOST_TEST(problem->size() < 200u);
            BOOST_CHECK_THROW(WorkerMatch{pattern}, std::invalid_argument);
        }
    }
    for (const std::string& pattern : std::vector<std::string>{
             "pt_data_worker", "worker|loader", "^python3? .*--multiprocessing-fork$",
             "[[:alpha:]_]+worker", "[]a{]+", "a{1,255}", "x{2,}y", "a{,5}", "\\bworker\\b", "",
             std::string(256, 'a')})
        BOOST_TEST(!WorkerMatch::problem(pattern), pattern.substr(0, 40));
}

BOOST_AUTO_TEST_CASE(worker_rule_refuses_a_refused_pattern) {
    BOOST_CHECK_THROW(WorkerRule(1, std::string(100'000, '(')), std::invalid_argument);
    BOOST_CHECK_NO_THROW(WorkerRule(1, std::string("pt_data_worker")));
}

// The reproducer: a descendant with 300 arguments of 100 characters (30 KB of command
// line) under --worker-match '.*worker'. Before: the recorder died of SIGSEGV and the command ran
// on unrecorded. Now the command's status comes back and the descendant is recorded, a worker.
BOOST_AUTO_TEST_CASE(record_with_a_30kb_command_line) {
    TempDir dir;
    const std::string output = dir.file("long.db");
    std::vector<std::string> argv{cli_path(), "record", "-q", "--interval", "fast=50ms", "-o",
                                  output, "--worker-match", ".*worker", "--", "sh", "-c",
                                  // Two commands, so that the inner shell does not exec sleep.
                                  "sh -c 'sleep 0.5; true' worker \"$@\"; exit 3", "sh"};
    for (int i = 0; i < 300; ++i)
        argv.push_back(std::string(97, 'a') + std::to_string(100 + i));
    const RunResult result = run(argv, std::chrono::seconds(30));
    BOOST_TEST(result.exit_code == 3, result.err);
    bool long_worker = false;
    for (const ProcessInfo& process : Recording(output).processes())
        long_worker =
            long_worker || (process.cmdline.size() > 30'000 && process.role == Role::worker);
    BOOST_TEST(long_worker, "the shell with the 30 KB command line was not recorded as a worker");
}

// A 100 KB pattern: one line naming the option, exit 2, nothing recorded (the CLI checks it with
// WorkerMatch::problem when it parses options).
BOOST_AUTO_TEST_CASE(record_refuses_a_100kb_pattern) {
    TempDir dir;
    const RunResult result = run({cli_path(), "record", "-q", "-o", dir.file("no.db"),
                                  "--worker-match", std::string(100'000, '('), "--", "true"});
    BOOST_TEST(result.exit_code == 2);
    BOOST_TEST(lines_of(result.err).size() == 1u, result.err.substr(0, 300));
    BOOST_TEST(result.err.find("--worker-match") != std::string::npos);
    BOOST_TEST(result.err.size() < 400u);
}

BOOST_AUTO_TEST_SUITE_END()
