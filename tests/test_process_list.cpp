// SPDX-License-Identifier: MIT
// The libproc2 process list (core/proc/process_list): every figure of a forked tree against
// /proc/PID/stat and status read directly, and the data-loader marks on real trees (renamed
// pt_data_worker children, python forks) and on trees that must stay unmarked.
#include "loader_tree.hpp"
#include "loaderlens/process_list.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <iterator>
#include <pwd.h>
#include <sstream>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;

namespace loaderlens { // so that Boost.Test can print them in failure messages
inline std::ostream& operator<<(std::ostream& out, LoaderRole role) {
    return out << to_string(role);
}
inline std::ostream& operator<<(std::ostream& out, LoaderRule rule) {
    return out << to_string(rule);
}
} // namespace loaderlens

namespace {

const ListedProcess& find(const std::vector<ListedProcess>& list, pid_t pid) {
    auto it = std::find_if(list.begin(), list.end(),
                           [pid](const ListedProcess& p) { return p.pid == pid; });
    BOOST_REQUIRE_MESSAGE(it != list.end(), "PID " << pid << " is not in the list");
    return *it;
}

// Every figure the list took from libproc2 against the files read here.
void check_against_proc(const ListedProcess& listed) {
    const ProcFacts facts = proc_facts(listed.pid);
    BOOST_TEST_CONTEXT("PID " << listed.pid) {
        BOOST_TEST(listed.ppid == facts.ppid);
        BOOST_TEST(listed.comm == facts.comm);
        BOOST_TEST(listed.state == facts.state);
        BOOST_TEST(listed.start_ticks == facts.start_ticks);
        BOOST_TEST(listed.uid == facts.effective_uid);
        const passwd* entry = getpwuid(facts.effective_uid);
        BOOST_TEST(listed.user == (entry ? entry->pw_name : std::to_string(facts.effective_uid)));
        // statm's resident pages and status's VmRSS are the same counters; the tree is paused.
        BOOST_REQUIRE(listed.res.has_value());
        BOOST_TEST(*listed.res == facts.vm_rss_kb);
        // The start as a Unix time: now minus the process's age (boot clock, in ticks).
        timespec boot{};
        clock_gettime(CLOCK_BOOTTIME, &boot);
        const double age =
            static_cast<double>(boot.tv_sec) -
            static_cast<double>(facts.start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
        BOOST_TEST(std::abs(static_cast<double>(listed.start_time) -
                            (static_cast<double>(time(nullptr)) - age)) <= 2.0);
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(process_list)

// A main whose children are named pt_data_worker is a main; those children are its workers and
// a child with another name is not.
BOOST_AUTO_TEST_CASE(pt_data_worker_children_mark_their_parent) {
    LoaderTree tree(2, 1);
    BOOST_REQUIRE(children_of(tree.main()).size() == 3u);
    const auto list = list_processes({std::chrono::milliseconds(0)});
    const ListedProcess& main = find(list, tree.main());
    BOOST_TEST(main.role == LoaderRole::main);
    BOOST_TEST(main.rule == LoaderRule::pt_data_worker_children);
    BOOST_TEST(main.workers == tree.workers(), boost::test_tools::per_element());
    check_against_proc(main);
    for (pid_t pid : tree.workers()) {
        const ListedProcess& worker = find(list, pid);
        BOOST_TEST(worker.role == LoaderRole::worker);
        BOOST_TEST(worker.main == tree.main());
        BOOST_TEST(worker.comm == "pt_data_worker");
        check_against_proc(worker);
    }
    const ListedProcess& helper = find(list, tree.helpers().front());
    BOOST_TEST(helper.role == LoaderRole::none);
    BOOST_TEST(helper.main == 0);
    check_against_proc(helper);
}

// Forked children of a process that is not python, none renamed: nothing is marked (the test
// binary is no python).
BOOST_AUTO_TEST_CASE(forked_children_of_a_program_that_is_not_python_mark_nothing) {
    LoaderTree tree(0, 2);
    const auto list = list_processes({std::chrono::milliseconds(0)});
    BOOST_TEST(find(list, tree.main()).role == LoaderRole::none);
    for (pid_t pid : tree.helpers())
        BOOST_TEST(find(list, pid).role == LoaderRole::none);
}

// A python main with two forked children (a DataLoader's workers under PyTorch 1.13 look so:
// comm python3, the parent's cmdline) and one child that exec'd python again (as
// multiprocessing's spawn or resource tracker do): the forks are workers, the exec'd one not.
BOOST_AUTO_TEST_CASE(forked_python_children_mark_their_parent, *LOADERLENS_MAY_SKIP) {
    if (!precondition(std::filesystem::exists("/usr/bin/python3"), "needs /usr/bin/python3",
                      InCi::must_have))
        return;
    Child python({"/usr/bin/python3", "-c", R"py(
import os, subprocess, sys, time
forks = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    forks.append(pid)
spawned = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("ready", spawned.pid, *forks, flush=True)
time.sleep(60)
)py"});
    BOOST_REQUIRE(python.wait_for_line("ready", std::chrono::seconds(20)));
    std::istringstream words(python.output().substr(python.output().find("ready") + 5));
    pid_t spawned = 0;
    words >> spawned;
    std::vector<pid_t> forks{std::istream_iterator<pid_t>(words), {}};
    std::sort(forks.begin(), forks.end());
    BOOST_REQUIRE(forks.size() == 2u);

    const auto list = list_processes({std::chrono::milliseconds(0)});
    const ListedProcess& main = find(list, python.pid());
    BOOST_TEST(main.role == LoaderRole::main);
    BOOST_TEST(main.rule == LoaderRule::forked_python_children);
    BOOST_TEST(main.workers == forks, boost::test_tools::per_element());
    check_against_proc(main);
    for (pid_t pid : forks) {
        BOOST_TEST(find(list, pid).role == LoaderRole::worker);
        BOOST_TEST(find(list, pid).argv == main.argv, boost::test_tools::per_element());
    }
    const ListedProcess& other = find(list, spawned);
    BOOST_TEST(other.role == LoaderRole::none);
    BOOST_TEST(runs_python(other));
}

// CPU over an interval: a spinning child is busy, a paused one idle; both within what
// /proc/PID/stat says about the same span (read before and after the listing).
BOOST_AUTO_TEST_CASE(cpu_over_the_interval_against_stat) {
    ForkGuard idle(fork_paused());
    const pid_t spinner_pid = fork();
    if (spinner_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        volatile unsigned long spins = 0;
        for (;;)
            spins = spins + 1;
    }
    ForkGuard spinner(spinner_pid);
    // Busy for a while before the listing, so that CPU time since the start is not the same
    // figure as CPU time over the interval.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const double hertz = static_cast<double>(sysconf(_SC_CLK_TCK));
    const auto before = proc_facts(spinner.pid());
    const auto started = std::chrono::steady_clock::now();
    const auto list = list_processes({std::chrono::milliseconds(300)});
    const double outer =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const auto after = proc_facts(spinner.pid());
    // At most the ticks of the whole span around the call (plus one tick of rounding), spread
    // over the listing's 300 ms.
    const double most =
        (static_cast<double>(after.cpu_ticks - before.cpu_ticks) + 1) / hertz / 0.3 * 100;
    const ListedProcess& busy = find(list, spinner.pid());
    BOOST_TEST_MESSAGE("spinner: " << busy.cpu_percent.value_or(-1) << "% (stat: at most " << most
                                   << "% over " << outer << " s)");
    BOOST_REQUIRE(busy.cpu_percent.has_value());
    BOOST_TEST(*busy.cpu_percent > 0.0);
    BOOST_TEST(*busy.cpu_percent <= most);
    const ListedProcess& paused = find(list, idle.pid());
    BOOST_REQUIRE(paused.cpu_percent.has_value());
    BOOST_TEST(*paused.cpu_percent == 0.0);
}

// The owner read directly, and a user's name: a child that became nobody.
BOOST_AUTO_TEST_CASE(owner_of_another_users_process, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to become nobody", InCi::must_have)) return;
    const pid_t pid = fork_paused_nobody();
    ForkGuard child(pid);
    const auto owner = read_process_owner(pid);
    BOOST_REQUIRE(owner.has_value());
    BOOST_TEST(owner->real == 65534u);
    BOOST_TEST(owner->effective == proc_facts(pid).effective_uid);
    BOOST_TEST(owner->saved == 65534u);
    const auto id = run({"id", "-nu", "65534"});
    BOOST_TEST(user_name(65534) + "\n" == id.out);
    BOOST_TEST(!read_process_owner(-1).has_value());
    const auto list = list_processes({std::chrono::milliseconds(0)});
    BOOST_TEST(find(list, pid).uid == 65534u);
    BOOST_TEST(find(list, pid).user + "\n" == id.out);
}

BOOST_AUTO_TEST_SUITE_END()
