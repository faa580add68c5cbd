// SPDX-License-Identifier: MIT
// The fast tier's cheap tracker paths against real processes: births from the members' children
// lists (and the forced fallback, the /proc listing at every tick, finding the same tree), a
// child forked by another thread (not in the main thread's list: the periodic listing finds it),
// and exits of settled members (whose stat is no longer read at every tick) from their pidfds.
#include "loaderlens/open_children_files.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <future>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

std::set<pid_t> pids_of(const std::vector<ProcessInfo>& live) {
    std::set<pid_t> pids;
    for (const auto& p : live)
        pids.insert(p.key.pid);
    return pids;
}

} // namespace

BOOST_AUTO_TEST_SUITE(fast_tracker)

BOOST_AUTO_TEST_CASE(children_lists_and_forced_listing_find_the_same_tree) {
    TempDir dir;
    const std::string data = dir.file("data.bin");
    make_file(data, 1 << 20);
    auto argv = workload(data, 3, 1);
    argv.insert(argv.end(), {"--grandchildren", "1"});
    Child child(argv);
    BOOST_REQUIRE(child.wait_for_line("ready", 20s));
    RecordingClock clock;
    TreeTracker lists(TrackerOptions{.scan_root = child.pid(), .main_pid = child.pid()}, clock);
    TreeTracker listing(
        TrackerOptions{.scan_root = child.pid(), .main_pid = child.pid(), .children_lists = false},
        clock);
    BOOST_TEST(lists.uses_children_lists() == OpenChildrenFiles::kernel_has_children_lists());
    BOOST_TEST(!listing.uses_children_lists());
    if (!OpenChildrenFiles::kernel_has_children_lists())
        BOOST_TEST_MESSAGE("LOADERLENS-SKIP: no /proc/PID/task/TID/children on this kernel: both "
                           "trackers list /proc");
    const auto by_lists = track_until(lists, 7);
    const auto by_listing = track_until(listing, 7);
    BOOST_REQUIRE_EQUAL(by_lists.size(), 7u);
    BOOST_TEST(pids_of(by_lists) == pids_of(by_listing));
    // Steady state: nothing is born or lost by either path.
    for (int i = 0; i < 5; ++i) {
        BOOST_TEST(lists.scan().empty());
        BOOST_TEST(listing.scan().empty());
    }
}

BOOST_AUTO_TEST_CASE(child_of_another_thread_found_by_the_periodic_listing) {
    RecordingClock clock;
    TreeTracker tracker(TrackerOptions{.scan_root = getpid(),
                                       .track_scan_root = false,
                                       .main_pid = getpid(),
                                       .full_scan_ms = 300},
                        clock);
    tracker.scan();
    // The child dies with the thread that forked it: the thread waits until the test is done.
    std::promise<pid_t> forked;
    std::promise<void> done;
    std::thread forker([&] {
        forked.set_value(fork_paused());
        done.get_future().wait();
    });
    ForkGuard child(forked.get_future().get());
    const std::int64_t start = clock.now_ms();
    bool found = false;
    while (!found && clock.now_ms() - start < 5000) {
        for (const auto& born : tracker.scan().born)
            found = found || born.key.pid == child.pid();
        if (!found) std::this_thread::sleep_for(20ms); // a tick's pace, not a synchronisation
    }
    const std::int64_t took = clock.now_ms() - start;
    child.kill_and_reap();
    done.set_value();
    forker.join();
    BOOST_TEST(found);
    BOOST_TEST_MESSAGE("found after " << took << " ms (full listing every 300 ms)");
    BOOST_TEST(took < 2000); // the listing's period plus a loaded machine's delays
}

BOOST_AUTO_TEST_CASE(settled_members_exits_come_from_pidfds) {
    RecordingClock clock;
    TreeTracker tracker(
        TrackerOptions{.scan_root = getpid(), .track_scan_root = false, .main_pid = getpid()},
        clock);
    tracker.scan();
    ForkGuard zombie(fork_paused());
    ForkGuard reaped(fork_paused());
    BOOST_REQUIRE_EQUAL(tracker.scan().born.size(), 2u);
    // Past the tracker's young period (3 s), their stat is read only when their pidfd says they
    // ended, or once a second.
    const auto live = tracker.live();
    while (clock.now_ms() - live.front().birth_ms < 3500) {
        BOOST_TEST(tracker.scan().empty());
        std::this_thread::sleep_for(100ms); // lets time pass at the fast tier's pace
    }
    kill(zombie.pid(), SIGTERM);
    siginfo_t info{};
    BOOST_REQUIRE(waitid(P_PID, static_cast<id_t>(zombie.pid()), &info, WEXITED | WNOWAIT) == 0);
    auto changes = tracker.scan();
    BOOST_REQUIRE_EQUAL(changes.exited.size(), 1u);
    BOOST_TEST(changes.exited[0].key.pid == zombie.pid());
    BOOST_REQUIRE(changes.exited[0].exit_status.has_value());
    BOOST_TEST(WIFSIGNALED(*changes.exited[0].exit_status));
    BOOST_TEST(WTERMSIG(*changes.exited[0].exit_status) == SIGTERM);
    zombie.reap();

    reaped.kill_and_reap(SIGKILL);
    changes = tracker.scan();
    BOOST_REQUIRE_EQUAL(changes.exited.size(), 1u);
    BOOST_TEST(changes.exited[0].key.pid == reaped.pid());
    BOOST_TEST(tracker.live().empty());
}

BOOST_AUTO_TEST_SUITE_END()
