// SPDX-License-Identifier: MIT
// The times of two processes under one reused PID. Part of the tree_tracker suite, which runs
// alone (it forks from the test process and looks at all of its children).
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(tree_tracker)

// The first process's PID was free before the second took it: its end is at or before the
// second's start, however late the scan that notices both comes. Before, the first was stamped
// with the time of that scan, after the second's birth.
BOOST_AUTO_TEST_CASE(reused_pid_ends_before_the_new_process_begins, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0 && access("/proc/sys/kernel/ns_last_pid", W_OK) == 0,
                      "needs root to write /proc/sys/kernel/ns_last_pid", InCi::must_have))
        return;
    RecordingClock clock;
    TreeTracker tracker(
        TrackerOptions{.scan_root = getpid(), .track_scan_root = false, .main_pid = getpid()},
        clock);
    for (int attempt = 0; attempt < 10; ++attempt) {
        tracker.scan();
        ForkGuard first(fork_paused());
        auto born = tracker.scan().born;
        BOOST_REQUIRE_EQUAL(born.size(), 1u);
        first.kill_and_reap();
        std::this_thread::sleep_for(30ms); // start times have 10 ms resolution
        {
            std::ofstream last("/proc/sys/kernel/ns_last_pid");
            last << first.pid() - 1;
        }
        ForkGuard second(fork_paused());
        if (second.pid() != first.pid()) { // another process took it first: try again
            second.kill_and_reap();
            tracker.scan();
            continue;
        }
        std::this_thread::sleep_for(50ms); // the scan comes well after the second's birth
        auto changes = tracker.scan();
        BOOST_REQUIRE_EQUAL(changes.exited.size(), 1u);
        BOOST_REQUIRE_EQUAL(changes.born.size(), 1u);
        const ProcessInfo& ended = changes.exited[0];
        const ProcessInfo& began = changes.born[0];
        BOOST_TEST(ended.id == born[0].id);
        BOOST_REQUIRE(ended.exit_ms.has_value());
        BOOST_TEST(*ended.exit_ms <= began.birth_ms);
        BOOST_TEST(*ended.exit_ms >= ended.birth_ms);
        return;
    }
    BOOST_FAIL("could not get the same PID twice in 10 attempts");
}

BOOST_AUTO_TEST_SUITE_END()
