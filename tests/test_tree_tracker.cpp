// SPDX-License-Identifier: MIT
// The tracker against real process trees: grandchildren, births and exits, PID reuse. Every
// child forked here is held by a ForkGuard: a failed check kills and reaps it, never leaves it
// paused behind (the suite forks from the test process and looks at all of its children).
#include "precondition.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(tree_tracker)

BOOST_AUTO_TEST_CASE(finds_grandchildren_with_roles) {
    TempDir dir;
    const std::string data = dir.file("data.bin");
    make_file(data, 1 << 20);
    auto argv = workload(data, 2, 1);
    argv.insert(argv.end(), {"--grandchildren", "1"});
    Child child(argv);
    BOOST_REQUIRE(child.wait_for_line("ready", 20s));
    RecordingClock clock;
    TreeTracker tracker(TrackerOptions{.scan_root = child.pid(), .main_pid = child.pid()}, clock);
    auto live = track_until(tracker, 5);
    BOOST_REQUIRE_EQUAL(live.size(), 5u);
    int mains = 0, workers = 0, helpers = 0;
    for (const auto& p : live) {
        mains += p.role == Role::main;
        workers += p.role == Role::worker;
        helpers += p.role == Role::helper;
        if (p.role == Role::helper) BOOST_TEST(p.parent_id != 0); // a worker's child
    }
    BOOST_TEST(mains == 1);
    BOOST_TEST(workers == 2);
    BOOST_TEST(helpers == 2);

    // --worker-match turns the grandchildren into workers too (forkserver-style trees).
    TreeTracker matching(TrackerOptions{.scan_root = child.pid(),
                                        .main_pid = child.pid(),
                                        .worker_match = "loaderlens-test"},
                         clock);
    auto all = track_until(matching, 5);
    BOOST_TEST(
        std::count_if(all.begin(), all.end(), [](auto& p) { return p.role == Role::worker; }) == 4);
}

BOOST_AUTO_TEST_CASE(births_exits_and_exit_status) {
    RecordingClock clock;
    TreeTracker tracker(
        TrackerOptions{.scan_root = getpid(), .track_scan_root = false, .main_pid = getpid()},
        clock);
    tracker.scan();
    ForkGuard child(fork_paused());
    auto changes = tracker.scan();
    BOOST_REQUIRE_EQUAL(changes.born.size(), 1u);
    BOOST_TEST(changes.born[0].key.pid == child.pid());
    BOOST_TEST(changes.born[0].role == Role::worker);
    BOOST_TEST(changes.born[0].slot == 0);
    kill(child.pid(), SIGTERM);
    // Once it is a zombie (not reaped: waitid with WNOWAIT), the tracker reads its exit code
    // from /proc/PID/stat.
    siginfo_t info{};
    BOOST_REQUIRE(waitid(P_PID, static_cast<id_t>(child.pid()), &info, WEXITED | WNOWAIT) == 0);
    changes = tracker.scan();
    BOOST_REQUIRE_EQUAL(changes.exited.size(), 1u);
    BOOST_REQUIRE(changes.exited[0].exit_status.has_value());
    BOOST_TEST(WIFSIGNALED(*changes.exited[0].exit_status));
    BOOST_TEST(WTERMSIG(*changes.exited[0].exit_status) == SIGTERM);
    child.reap();
    BOOST_TEST(tracker.live().empty());
}

BOOST_AUTO_TEST_CASE(reused_pid_is_a_new_process, *LOADERLENS_MAY_SKIP) {
    // Forces the kernel to hand out the same PID again through /proc/sys/kernel/ns_last_pid.
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
        BOOST_TEST(began.key.pid == first.pid());
        BOOST_TEST(began.id != born[0].id);
        BOOST_TEST(began.key.start_ticks != born[0].key.start_ticks);
        // The first's PID was free before the second took it: its end is at or before the
        // second's start, however late the scan that notices both comes (it was once stamped
        // with the time of that scan, after the second's birth).
        BOOST_REQUIRE(ended.exit_ms.has_value());
        BOOST_TEST(*ended.exit_ms <= began.birth_ms);
        BOOST_TEST(*ended.exit_ms >= ended.birth_ms);
        return;
    }
    BOOST_FAIL("could not get the same PID twice in 10 attempts");
}

BOOST_AUTO_TEST_CASE(descendant_reusing_an_outsiders_pid_is_found, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0 && access("/proc/sys/kernel/ns_last_pid", W_OK) == 0,
                      "needs root to write /proc/sys/kernel/ns_last_pid", InCi::must_have))
        return;
    // root forks a child each time a byte arrives on its pipe.
    int request[2];
    BOOST_REQUIRE(pipe(request) == 0);
    ForkGuard root(fork());
    if (root.pid() == 0) {
        close(request[1]);
        char byte;
        while (read(request[0], &byte, 1) == 1)
            if (fork() == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); // die with root
                pause();
                _exit(0);
            }
        _exit(0);
    }
    close(request[0]);
    RecordingClock clock;
    TreeTracker tracker(TrackerOptions{.scan_root = root.pid(), .main_pid = root.pid()}, clock);
    bool done = false;
    for (int attempt = 0; attempt < 10 && !done; ++attempt) {
        ForkGuard outsider(fork_paused()); // our child, not root's: outside the tree
        tracker.scan();
        outsider.kill_and_reap();
        std::this_thread::sleep_for(30ms);
        {
            std::ofstream last("/proc/sys/kernel/ns_last_pid");
            last << outsider.pid() - 1;
        }
        BOOST_REQUIRE(write(request[1], "x", 1) == 1);
        std::this_thread::sleep_for(50ms);
        auto born = tracker.scan().born;
        auto same = std::find_if(born.begin(), born.end(),
                                 [&](auto& p) { return p.key.pid == outsider.pid(); });
        done = same != born.end();
    }
    close(request[1]);
    root.kill_and_reap(); // its children die with it (PR_SET_PDEATHSIG)
    BOOST_TEST(done, "a child of root that took a recently freed outsider PID was not found");
}

BOOST_AUTO_TEST_CASE(role_is_revised_after_an_exec_that_keeps_comm) {
    // A child caught between fork and exec looks like a worker; after its exec (same comm, as
    // python -> python under spawn) its command line says resource_tracker: a helper.
    TempDir dir;
    const std::string same_comm = dir.file("loaderlens_tests"); // comm "loaderlens_test"
    std::filesystem::create_symlink("/bin/sh", same_comm);
    RecordingClock clock;
    TreeTracker tracker(
        TrackerOptions{.scan_root = getpid(), .track_scan_root = false, .main_pid = getpid()},
        clock);
    tracker.scan();
    int go[2];
    BOOST_REQUIRE(pipe(go) == 0);
    ForkGuard child(fork());
    if (child.pid() == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char byte;
        if (read(go[0], &byte, 1) != 1) _exit(1);
        execl(same_comm.c_str(), "loaderlens_tests", "-c", "sleep 5", "resource_tracker", nullptr);
        _exit(127);
    }
    auto born = tracker.scan().born;
    BOOST_REQUIRE_EQUAL(born.size(), 1u);
    BOOST_TEST(born[0].role == Role::worker);
    BOOST_REQUIRE(write(go[1], "x", 1) == 1);
    bool revised = false;
    for (int i = 0; i < 50 && !revised; ++i) {
        std::this_thread::sleep_for(20ms);
        for (const auto& p : tracker.scan().renamed)
            revised =
                revised || (p.key.pid == child.pid() && p.role == Role::helper && p.slot == -1);
    }
    BOOST_TEST(revised);
    child.kill_and_reap();
    close(go[0]);
    close(go[1]);
    // The slot it held was given back and its use undone: the next worker is slot 0, gen 0.
    ForkGuard next(fork_paused());
    auto next_born = tracker.scan().born;
    next.kill_and_reap();
    BOOST_REQUIRE(!next_born.empty());
    BOOST_TEST(next_born.back().slot == 0);
    BOOST_TEST(next_born.back().generation == 0);
}

BOOST_AUTO_TEST_SUITE_END()
