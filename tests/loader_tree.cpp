// SPDX-License-Identifier: MIT
#include "loader_tree.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <poll.h>
#include <sstream>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>

namespace loaderlens::test {

namespace {

// Forked in the main: only async-signal-safe calls from here on.
[[noreturn]] void run_main(int workers, int helpers, int report) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 0; i < workers + helpers; ++i) {
        if (fork() != 0) continue;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (i < workers) prctl(PR_SET_NAME, "pt_data_worker", 0, 0, 0);
        // Its PID and kind, once renamed: the test waits for every child's record.
        struct {
            pid_t pid;
            int worker;
        } record{getpid(), i < workers};
        if (write(report, &record, sizeof record) != sizeof record) _exit(1);
        for (;;)
            pause();
    }
    for (;;)
        pause();
}

pid_t fork_main(int workers, int helpers, int report[2]) {
    const pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        run_main(workers, helpers, report[1]);
    }
    return pid;
}

} // namespace

LoaderTree::LoaderTree(int workers, int helpers)
    : main_([&] {
          int report[2];
          BOOST_REQUIRE(pipe(report) == 0);
          const pid_t pid = fork_main(workers, helpers, report);
          close(report[1]);
          report_fd_ = report[0];
          return pid;
      }()) {
    BOOST_REQUIRE(main_.pid() > 0);
    struct {
        pid_t pid;
        int worker;
    } record{};
    for (int i = 0; i < workers + helpers; ++i) {
        pollfd ready{report_fd_, POLLIN, 0};
        BOOST_REQUIRE_MESSAGE(poll(&ready, 1, 10'000) == 1, "the tree's children did not start");
        BOOST_REQUIRE(read(report_fd_, &record, sizeof record) == sizeof record);
        (record.worker ? workers_ : helpers_).push_back(record.pid);
    }
    close(report_fd_);
    std::sort(workers_.begin(), workers_.end());
    std::sort(helpers_.begin(), helpers_.end());
    // A child reports itself just before it pauses: until it sleeps, a list taken now may see it
    // running ('R' against the 'S' read a moment later; seen once under a parallel build).
    std::vector<pid_t> all{main_.pid()};
    all.insert(all.end(), workers_.begin(), workers_.end());
    all.insert(all.end(), helpers_.begin(), helpers_.end());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (pid_t pid : all)
        while (proc_facts(pid).state != 'S') {
            BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                                  "PID " << pid << " of the tree never went to sleep");
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
}

ProcFacts proc_facts(pid_t pid) {
    ProcFacts facts;
    std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
    const std::size_t open = stat.find('('), close = stat.rfind(')');
    BOOST_REQUIRE_MESSAGE(open != std::string::npos && close != std::string::npos,
                          "/proc/" << pid << "/stat: " << stat);
    facts.comm = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 2));
    std::vector<std::string> fields{std::istream_iterator<std::string>(rest), {}};
    // fields[0] is field 3 (state): field N is fields[N - 3].
    BOOST_REQUIRE(fields.size() > 20);
    facts.state = fields[0][0];
    facts.ppid = std::stoi(fields[1]);
    facts.cpu_ticks = std::stoull(fields[11]) + std::stoull(fields[12]);
    facts.start_ticks = std::stoull(fields[19]);
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (key == "Uid:") {
            uid_t real;
            words >> real >> facts.effective_uid;
        } else if (key == "VmRSS:") {
            words >> facts.vm_rss_kb;
        }
    }
    return facts;
}

std::vector<pid_t> children_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
    std::vector<pid_t> out{std::istream_iterator<pid_t>(in), {}};
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace loaderlens::test
