// Preconditions of tests: what a test needs from the machine (root, numpy, fincore, a cgroup
// hierarchy, a kernel feature). A test that lacks one is reported as skipped with its reason, never
// as passed; in strict mode (LOADERLENS_STRICT=1, set by .ci/run) a missing precondition that CI is
// supposed to have fails the test instead.
#pragma once

#include <boost/test/unit_test.hpp>
#include <string>

namespace loaderlens::test {

// Whether CI machines are supposed to meet a precondition (setup.sh installs it, CI runs as root).
enum class InCi { must_have, may_lack };

// True when `holds`. Otherwise prints "LOADERLENS-SKIP: <reason>" on stdout (ctest's
// SKIP_REGULAR_EXPRESSION reports the test as Skipped), or, in strict mode for a must_have
// precondition, fails the current test with "LOADERLENS-MISSING: <reason>".
// Use as: if (!precondition(getuid() == 0, "needs root to become nobody", InCi::must_have)) return;
bool precondition(bool holds, const std::string& reason, InCi in_ci);

// Whether LOADERLENS_STRICT=1.
bool strict_mode();

} // namespace loaderlens::test

// Decorator for every test case that may call precondition(): such a case gets a ctest entry of
// its own, so that its skip never hides the results of the other cases of its suite.
//   BOOST_AUTO_TEST_CASE(name, *LOADERLENS_MAY_SKIP) { ... }
#define LOADERLENS_MAY_SKIP boost::unit_test::label("may_skip")
