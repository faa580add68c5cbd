// SPDX-License-Identifier: MIT
// The fuzz suites' oracle (judge_outcome, csv_problem) on made-up command ends: each rule of the
// exit-code table (docs/cli.md) it enforces says no to an end that breaks it, yes to a clean one.
#include "fuzz_options.hpp"
#include "fuzz_outcome.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>

using namespace loaderlens::test;

namespace {
CommandEnd exited(int code, std::string out, std::string err) {
    CommandEnd end;
    end.status = code << 8; // as waitpid reports an exit
    end.out = std::move(out);
    end.err = std::move(err);
    return end;
}
FuzzCommand command(FuzzOutput output, std::vector<std::string> names = {"run.db"}) {
    FuzzCommand c;
    c.argv = {"loaderlens", "report", "run.db"};
    c.output = output;
    c.names = std::move(names);
    return c;
}
} // namespace

BOOST_AUTO_TEST_SUITE(fuzz_oracle)

BOOST_AUTO_TEST_CASE(a_clean_refusal_or_valid_output_passes) {
    BOOST_TEST(!judge_outcome(command(FuzzOutput::text),
                              exited(2, "", "loaderlens: run.db: not a recording\n")));
    BOOST_TEST(!judge_outcome(command(FuzzOutput::json), exited(0, "{\"a\": [1, 2]}\n", "")));
    BOOST_TEST(!judge_outcome(command(FuzzOutput::csv), exited(0, "a,b\n1,\"x,\"\"y\"\"\"\n", "")));
}

BOOST_AUTO_TEST_CASE(every_broken_rule_is_a_failure) {
    const FuzzCommand json = command(FuzzOutput::json);
    BOOST_TEST(judge_outcome(json, exited(0, "{\"a\": [1, 2\n", "")).has_value()); // not JSON
    BOOST_TEST(judge_outcome(json, exited(1, "", "loaderlens: run.db: damaged\n")).has_value());
    BOOST_TEST(
        judge_outcome(json, exited(2, "", "loaderlens: run.db: damaged\n(line 2)\n")).has_value());
    BOOST_TEST(judge_outcome(json, exited(2, "", "loaderlens: prepare: no such column\n"))
                   .has_value()); // names no file
    BOOST_TEST(judge_outcome(json, exited(2, "", "loaderlens: run.db: stoll\n")).has_value());
    BOOST_TEST(judge_outcome(json, exited(0, "{}", "==1==ERROR: AddressSanitizer: heap-buffer"))
                   .has_value());
    BOOST_TEST(judge_outcome(json, exited(0, "{}", "x.cpp:3:5: runtime error: signed integer"))
                   .has_value());
    CommandEnd killed;
    killed.status = SIGSEGV; // as waitpid reports a death by signal
    BOOST_TEST(judge_outcome(json, killed).has_value());
    CommandEnd late;
    late.timed_out = true;
    BOOST_TEST(judge_outcome(json, late).has_value());
    FuzzCommand must_refuse = json;
    must_refuse.expect = FuzzExpect::refuse;
    BOOST_TEST(judge_outcome(must_refuse, exited(0, "{}", "")).has_value());
    FuzzCommand control = json;
    control.expect = FuzzExpect::succeed;
    BOOST_TEST(judge_outcome(control, exited(2, "", "loaderlens: run.db: damaged\n")).has_value());
}

BOOST_AUTO_TEST_CASE(csv_rows_must_match_the_header) {
    BOOST_TEST(!csv_problem("t,v\n1,2\n"));
    BOOST_TEST(csv_problem("t,v\n1,2,3\n").has_value());
    BOOST_TEST(csv_problem("t,v\n1,\"a\nb\n").has_value()); // ends inside quotes
    BOOST_TEST(csv_problem("t,v\n1,a\"b\n").has_value());
    BOOST_TEST(!csv_problem("t,v\n1,\"a\nb\"\n")); // a newline inside quotes is one row
    BOOST_TEST(csv_problem("").has_value());
}

// The value of CI's failure on 2026-11-23 (a random mkdata path) and the line the CLI wrote for
// it: \t by name, \r as \x0d, bytes past ASCII as they are. The oracle took it for a line that
// names nothing, since no form it knew wrote \t by name and \r in hex at once.
BOOST_AUTO_TEST_CASE(an_escaped_name_is_recognised_as_the_cli_writes_it) {
    const std::string value = "\x1e\xfeO\x84\x01-\t\xae\x7f\x0d\x06OV\x11xN\xad{";
    const std::string line =
        "loaderlens: \\x1e\xfeO\x84\\x01-\\t\xae\\x7f\\x0d\\x06OV\\x11xN\xad{: "
        "the file name holds a control character\n";
    FuzzCommand mkdata = command(FuzzOutput::text, name_forms(value));
    mkdata.expect = FuzzExpect::refuse;
    BOOST_TEST(!judge_outcome(mkdata, exited(2, "", line)));
    FuzzCommand other = command(FuzzOutput::text, name_forms("another\tzzz"));
    BOOST_TEST(judge_outcome(other, exited(2, "", line)).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
