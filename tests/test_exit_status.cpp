// SPDX-License-Identifier: MIT
// Exit statuses of workers that are children of main, not of the recorder: main reaps them, often
// between two scans. Where the kernel keeps the status for a pidfd (Linux 6.15+) the tracker must
// know it exactly; with the fallback forced (as on Debian 12's 6.1) it may know less, never
// something wrong.
#include "loaderlens/exit_watcher.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/tree_tracker.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <map>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

// The wait statuses the three workers end with: exit 3, exit 0, killed by SIGKILL.
const std::vector<int> expected_statuses{3 << 8, 0, SIGKILL};

// Forks a "main" that forks three workers, which end as above after 300 ms; main reaps each at
// once (a blocking waitpid, as Python's DataLoader does) and lives on for a second.
pid_t fork_main_with_workers() {
    const pid_t main_pid = fork();
    if (main_pid != 0) return main_pid;
    std::vector<pid_t> workers;
    for (int status : expected_statuses) {
        const pid_t worker = fork();
        if (worker == 0) {
            usleep(300'000);
            if (status == SIGKILL) raise(SIGKILL);
            _exit(status >> 8);
        }
        workers.push_back(worker);
    }
    for (pid_t worker : workers)
        waitpid(worker, nullptr, 0);
    usleep(1'000'000);
    _exit(0);
}

// Tracks main's tree until main has reaped its workers; returns worker slot -> exit status.
std::map<int, std::optional<int>> track_worker_exits(bool pidfd) {
    RecordingClock clock;
    const pid_t main_pid = fork_main_with_workers();
    TreeTracker tracker(
        TrackerOptions{.scan_root = main_pid, .main_pid = main_pid, .pidfd_exit_status = pidfd},
        clock);
    std::map<int, std::optional<int>> exits;
    for (int i = 0; i < 150 && exits.size() < expected_statuses.size(); ++i) {
        for (const auto& gone : tracker.scan().exited)
            if (gone.role == Role::worker) exits[gone.slot] = gone.exit_status;
        std::this_thread::sleep_for(10ms);
    }
    kill(main_pid, SIGKILL);
    waitpid(main_pid, nullptr, 0);
    return exits;
}

} // namespace

BOOST_AUTO_TEST_SUITE(exit_status)

BOOST_AUTO_TEST_CASE(workers_reaped_by_main_via_pidfd, *LOADERLENS_MAY_SKIP) {
    if (!precondition(ExitWatcher::kernel_supports_pidfd_exit_info(),
                      "this kernel keeps no exit status for a pidfd (PIDFD_INFO_EXIT, Linux 6.15)",
                      InCi::may_lack))
        return;
    auto exits = track_worker_exits(true);
    BOOST_REQUIRE_EQUAL(exits.size(), expected_statuses.size());
    for (std::size_t slot = 0; slot < expected_statuses.size(); ++slot) {
        BOOST_TEST_CONTEXT("slot " << slot) {
            BOOST_REQUIRE(exits[static_cast<int>(slot)].has_value());
            BOOST_TEST(*exits[static_cast<int>(slot)] == expected_statuses[slot]);
        }
    }
}

// The fallback, forced on every kernel: what is known is right; the rest is "not seen".
BOOST_AUTO_TEST_CASE(workers_reaped_by_main_fallback) {
    auto exits = track_worker_exits(false);
    BOOST_REQUIRE_EQUAL(exits.size(), expected_statuses.size());
    int known = 0;
    for (std::size_t slot = 0; slot < expected_statuses.size(); ++slot)
        if (auto status = exits[static_cast<int>(slot)]) {
            ++known;
            BOOST_TEST(*status == expected_statuses[slot]);
        }
    BOOST_TEST_MESSAGE("fallback knew " << known << " of 3 statuses (zombies caught)");
}

// End to end through `loaderlens record`: a Python main forks workers and reaps them itself.
BOOST_AUTO_TEST_CASE(recorded_statuses_of_python_workers, *LOADERLENS_MAY_SKIP) {
    if (!precondition(ExitWatcher::kernel_supports_pidfd_exit_info(),
                      "this kernel keeps no exit status for a pidfd (PIDFD_INFO_EXIT, Linux 6.15)",
                      InCi::may_lack))
        return;
    TempDir dir;
    const std::string output = dir.file("exits.db");
    RunResult result = run({cli_path(), "record", "-q", "--interval", "fast=50ms", "-o", output,
                            "--", "/usr/bin/python3", "-c",
                            "import os, signal, time\n"
                            "kids = []\n"
                            "for code in (3, 0, -9):\n"
                            "    pid = os.fork()\n"
                            "    if pid == 0:\n"
                            "        time.sleep(0.4)\n"
                            "        if code < 0: os.kill(os.getpid(), signal.SIGKILL)\n"
                            "        os._exit(code)\n"
                            "    kids.append(pid)\n"
                            "for pid in kids: os.waitpid(pid, 0)\n"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording recording(output);
    BOOST_TEST(recording.meta("exit_status_source") == "pidfd");
    std::map<int, std::optional<int>> by_slot;
    for (const auto& p : recording.processes())
        if (p.role == Role::worker) by_slot[p.slot] = p.exit_status;
    BOOST_REQUIRE_EQUAL(by_slot.size(), 3u);
    for (int slot = 0; slot < 3; ++slot) {
        BOOST_REQUIRE(by_slot[slot].has_value());
        BOOST_TEST(*by_slot[slot] == expected_statuses[static_cast<std::size_t>(slot)]);
    }
}

BOOST_AUTO_TEST_SUITE_END()
