// SPDX-License-Identifier: MIT
#include "precondition.hpp"

#include <boost/test/tree/observer.hpp>
#include <cstdlib>
#include <iostream>

namespace loaderlens::test {

namespace {

namespace ut = boost::unit_test;

// Prints a case's skip once the case is over, and only when nothing in it failed: ctest turns any
// output matching "LOADERLENS-SKIP" into Skipped, whatever the exit status, so a skip printed by a
// case that had failed a check first would hide that failure.
class SkipReporter : public ut::test_observer {
  public:
    SkipReporter() { ut::framework::register_observer(*this); }
    ~SkipReporter() { ut::framework::deregister_observer(*this); }
    SkipReporter(const SkipReporter&) = delete;
    SkipReporter& operator=(const SkipReporter&) = delete;

    static SkipReporter*& instance() {
        static SkipReporter* current = nullptr;
        return current;
    }
    void skip(const std::string& reason) {
        if (reason_.empty()) reason_ = reason;
    }

    void test_unit_start(const ut::test_unit& unit) override {
        if (unit.p_type != ut::TUT_CASE) return;
        failed_ = false;
        reason_.clear();
    }
    void assertion_result(ut::assertion_result result) override {
        if (result == ut::AR_FAILED) failed_ = true; // not AR_TRIGGERED: a BOOST_WARN
    }
    void exception_caught(const boost::execution_exception&) override { failed_ = true; }
    void test_unit_aborted(const ut::test_unit&) override { failed_ = true; }
    void test_unit_timed_out(const ut::test_unit&) override { failed_ = true; }
    void test_unit_finish(const ut::test_unit& unit, unsigned long) override {
        if (unit.p_type != ut::TUT_CASE || reason_.empty()) return;
        if (failed_)
            std::cout << "loaderlens: " << unit.full_name() << " failed, then found a precondition "
                      << "missing (" << reason_ << "): reported as failed, not skipped"
                      << std::endl;
        else
            std::cout << "LOADERLENS-SKIP: " << unit.full_name() << ": " << reason_ << std::endl;
        reason_.clear();
    }

  private:
    bool failed_ = false;
    std::string reason_;
};

struct SkipReporterFixture {
    SkipReporter reporter;
    SkipReporterFixture() { SkipReporter::instance() = &reporter; }
    ~SkipReporterFixture() { SkipReporter::instance() = nullptr; }
};

} // namespace

BOOST_TEST_GLOBAL_FIXTURE(SkipReporterFixture);

bool strict_mode() {
    const char* strict = std::getenv("LOADERLENS_STRICT");
    return strict && std::string(strict) == "1";
}

bool precondition(bool holds, const std::string& reason, InCi in_ci) {
    if (holds) return true;
    const ut::test_case& current = ut::framework::current_test_case();
    if (!current.has_label("may_skip")) {
        BOOST_ERROR("precondition '" << reason << "' missing in " << current.full_name()
                                     << ", which is not decorated with *LOADERLENS_MAY_SKIP: a "
                                        "skip would hide the other cases of its ctest entry");
        return false;
    }
    if (in_ci == InCi::must_have && strict_mode()) {
        BOOST_ERROR("LOADERLENS-MISSING: " << reason << " (strict mode: CI must have it)");
        return false;
    }
    std::cout << "precondition missing, skipping the rest of " << current.full_name() << ": "
              << reason << std::endl;
    if (SkipReporter* reporter = SkipReporter::instance()) reporter->skip(reason);
    return false;
}

} // namespace loaderlens::test
