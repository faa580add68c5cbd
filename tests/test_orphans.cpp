// SPDX-License-Identifier: MIT
// The reference loader's workers die with their main: a `loaderlens load` killed with SIGKILL
// (no handler can run) leaves no worker behind, as PyTorch's workers exit when their parent is
// gone. (That the loader dies with the recorder that launched it is `replay`'s part.)
#include "loaderlens/probes/mkdata.hpp"
#include "loaderlens/proc_text.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <dirent.h>
#include <sys/wait.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

struct Seen {
    pid_t pid;
    std::uint64_t start_ticks; // so that a reused PID is not taken for the worker
};

// The live (not zombie) children of `parent`.
std::vector<Seen> children_of(pid_t parent) {
    std::vector<Seen> children;
    DIR* proc = opendir("/proc");
    while (dirent* entry = proc ? readdir(proc) : nullptr) {
        const pid_t pid = std::atoi(entry->d_name);
        if (pid <= 0) continue;
        auto text = read_text_file("/proc/" + std::to_string(pid) + "/stat");
        auto stat = text ? parse_stat(*text) : std::nullopt;
        if (stat && stat->ppid == parent && stat->state != 'Z')
            children.push_back({pid, stat->start_ticks});
    }
    if (proc) closedir(proc);
    return children;
}

bool still_running(const Seen& process) {
    auto text = read_text_file("/proc/" + std::to_string(process.pid) + "/stat");
    auto stat = text ? parse_stat(*text) : std::nullopt;
    return stat && stat->start_ticks == process.start_ticks && stat->state != 'Z';
}

} // namespace

BOOST_AUTO_TEST_SUITE(orphans)

BOOST_AUTO_TEST_CASE(load_workers_die_with_their_main) {
    TempDir dir;
    probes::MkdataOptions data;
    data.path = dir.file("small.npy");
    data.count = 2000;
    data.sample_shape = {256};
    probes::make_dataset(data);
    for (const std::string persistent : {"--persistent", "--pin"}) {
        BOOST_TEST_CONTEXT(persistent) {
            Child loader({cli_path(), "load", data.path, "--workers", "3", "--epochs", "1000",
                          "--step-time", "20ms", "-q", persistent});
            std::vector<Seen> workers;
            for (int i = 0; i < 200 && workers.size() < 3; ++i) {
                std::this_thread::sleep_for(20ms);
                workers = children_of(loader.pid());
            }
            BOOST_REQUIRE_EQUAL(workers.size(), 3u);
            BOOST_REQUIRE(kill(loader.pid(), SIGKILL) == 0);
            BOOST_TEST(loader.wait(5s).has_value());
            bool any_left = true;
            for (int i = 0; i < 100 && any_left; ++i) { // 2 s
                std::this_thread::sleep_for(20ms);
                any_left = std::any_of(workers.begin(), workers.end(), still_running);
            }
            BOOST_TEST(!any_left, "a worker outlived its main by 2 s");
            for (const Seen& worker : workers) // ours if this process is a subreaper
                waitpid(worker.pid, nullptr, WNOHANG);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
