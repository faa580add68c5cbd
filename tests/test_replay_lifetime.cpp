// SPDX-License-Identifier: MIT
// `replay` runs the reference loader (`loaderlens load`) as its child: the loader and its workers
// must not outlive the recorder, however it dies, and the files beside the recording go with it
// wherever the recorder can remove them.
#include "loaderlens/proc_text.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> children;
    std::error_code error;
    const fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (const auto& task : fs::directory_iterator(tasks, error)) {
        std::ifstream in(task.path() / "children");
        for (pid_t child; in >> child;)
            children.push_back(child);
    }
    return children;
}

std::vector<pid_t> descendants_of(pid_t root) {
    std::vector<pid_t> found;
    std::vector<pid_t> next{root};
    while (!next.empty()) {
        const pid_t pid = next.back();
        next.pop_back();
        for (pid_t child : children_of(pid)) {
            found.push_back(child);
            next.push_back(child);
        }
    }
    return found;
}

struct Seen {
    pid_t pid;
    std::uint64_t start_ticks; // so that a reused PID is not taken for the process
};

Seen seen(pid_t pid) {
    auto text = read_text_file("/proc/" + std::to_string(pid) + "/stat");
    auto stat = text ? parse_stat(*text) : std::nullopt;
    return {pid, stat ? stat->start_ticks : 0};
}

// Alive and not a zombie. A zombie re-parented to this test process (a subreaper, after other
// tests) is reaped on the way.
bool running(const Seen& process) {
    waitpid(process.pid, nullptr, WNOHANG);
    auto text = read_text_file("/proc/" + std::to_string(process.pid) + "/stat");
    auto stat = text ? parse_stat(*text) : std::nullopt;
    return stat && stat->start_ticks == process.start_ticks && stat->state != 'Z';
}

// The replay's loader and its `workers` workers, once they all run (empty on timeout).
std::vector<pid_t> wait_for_loader(pid_t replay, std::size_t workers) {
    for (auto deadline = std::chrono::steady_clock::now() + 20s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(20ms)) {
        auto tree = descendants_of(replay);
        if (tree.size() >= 1 + workers) return tree;
    }
    return {};
}

std::vector<std::string> replay_argv(const std::string& data, const std::string& out) {
    // Long enough never to end by itself during the test (1000 epochs of 2 x 20 ms).
    return {cli_path(),    "replay", "-q", "--workers", "2", "--persistent", "--epochs", "1000",
            "--step-time", "20ms",   "-o", out,         data};
}

std::string small_dataset(const TempDir& dir) {
    const std::string path = dir.file("small.npy");
    auto made = run({cli_path(), "mkdata", "npy", path, "--count", "64", "--shape", "16"});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    return path;
}

} // namespace

BOOST_AUTO_TEST_SUITE(replay_lifetime)

// SIGKILL of `replay` (OverMemoryKill, the OOM killer, a user): its loader dies with it
// (PR_SET_PDEATHSIG on the launched `load`), and the loader's workers with the loader.
BOOST_AUTO_TEST_CASE(the_loader_dies_with_a_killed_replay) {
    TempDir dir;
    const std::string data = small_dataset(dir);
    Child replay(replay_argv(data, dir.file("k.db")));
    const auto tree = wait_for_loader(replay.pid(), 2);
    BOOST_REQUIRE_MESSAGE(tree.size() >= 3u, "the loader and its 2 workers never ran");
    std::vector<Seen> left;
    for (pid_t pid : tree)
        left.push_back(seen(pid));
    ::kill(replay.pid(), SIGKILL);
    BOOST_REQUIRE(replay.wait(5s));
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         !left.empty() && std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(20ms))
        std::erase_if(left, [](const Seen& process) { return !running(process); });
    std::ostringstream pids;
    for (const Seen& process : left)
        pids << " " << process.pid;
    BOOST_TEST(left.empty(), "still running 5 s after replay was killed:"
                                 << pids.str() << " (of the loader " << tree.front() << ")");
    for (const Seen& process : left)
        ::kill(process.pid, SIGKILL);
}

// SIGTERM: the loader is stopped the same way, the recording is finished, and the files beside it
// (the markers and the loader's events) are removed before replay dies of the signal itself.
BOOST_AUTO_TEST_CASE(a_terminated_replay_removes_its_sidecars) {
    TempDir dir;
    const std::string data = small_dataset(dir), out = dir.file("t.db");
    Child replay(replay_argv(data, out));
    BOOST_REQUIRE_MESSAGE(wait_for_loader(replay.pid(), 2).size() >= 3u, "the loader never ran");
    BOOST_TEST(fs::exists(out + ".markers"));
    BOOST_TEST(fs::exists(out + ".loader"));
    ::kill(replay.pid(), SIGTERM);
    auto status = replay.wait(10s);
    BOOST_REQUIRE(status.has_value());
    BOOST_TEST((WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM), "status " << *status);
    BOOST_TEST(fs::exists(out));
    BOOST_TEST(!fs::exists(out + ".markers"));
    BOOST_TEST(!fs::exists(out + ".loader"));
}

BOOST_AUTO_TEST_SUITE_END()
