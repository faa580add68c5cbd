// SPDX-License-Identifier: MIT
// Preconditions of tests: what a test needs from the machine (root, numpy, fincore, a cgroup
// hierarchy, a kernel feature). A test that lacks one is reported as skipped with its reason, never
// as passed; in strict mode (LOADERLENS_STRICT=1, set by .ci/run) a missing precondition that CI is
// supposed to have fails the test instead. docs/testing.md tells the whole story.
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>

namespace loaderlens::test {

// Whether CI machines are supposed to meet a precondition (setup.sh installs it, CI runs as root).
enum class InCi { must_have, may_lack };

// True when `holds`. Otherwise the case is to be skipped: the caller returns at once. When the case
// ends without a failure, "LOADERLENS-SKIP: <case>: <reason>" is printed on stdout and ctest's
// SKIP_REGULAR_EXPRESSION reports its entry as Skipped; a case that failed before (or after) stays
// failed. In strict mode a must_have precondition fails the case with "LOADERLENS-MISSING:
// <reason>" instead. Only for cases decorated with LOADERLENS_MAY_SKIP (anything else fails: its
// skip would hide the other cases of its suite's ctest entry). Use as: if (!precondition(getuid()
// == 0, "needs root to become nobody", InCi::must_have)) return;
bool precondition(bool holds, const std::string& reason, InCi in_ci);

// Whether LOADERLENS_STRICT=1.
bool strict_mode();

} // namespace loaderlens::test

// Decorator for every test case that may call precondition(): such a case gets a ctest entry of
// its own (named suite/case), and the suite's entry leaves it out, so that its skip never hides the
// results of the other cases of its suite.
//   BOOST_AUTO_TEST_CASE(name, *LOADERLENS_MAY_SKIP) { ... }
#define LOADERLENS_MAY_SKIP boost::unit_test::label("may_skip")

// Decorator for a test suite or case whose ctest entry must not run alongside any other (it forks
// from the test process and looks at all its children, say): ctest's RUN_SERIAL.
#define LOADERLENS_RUN_SERIAL boost::unit_test::label("run_serial")
