// SPDX-License-Identifier: MIT
// A recorded tree at a moment the test controls: every process of it stopped (SIGSTOP), then a
// sample of every tier asked for with a marker and awaited through the recorder's
// acknowledgement ($LOADERLENS_SAMPLED, core's SampleAck), so that the test's own reading of the
// kernel and the recording's sample see the same, unmoving tree.
#pragma once

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace loaderlens::test::paused {

inline std::optional<std::string> read_whole(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline pid_t parent_of(pid_t pid) {
    auto stat = read_whole("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return 0;
    const auto close = stat->rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream rest(stat->substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    return ppid;
}

// The processes below `root` (not `root` itself), at one scan of /proc.
inline std::set<pid_t> descendants(pid_t root) {
    std::map<pid_t, std::vector<pid_t>> children;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const pid_t pid = std::stoi(name);
        if (const pid_t parent = parent_of(pid)) children[parent].push_back(pid);
    }
    std::set<pid_t> out;
    std::vector<pid_t> todo{root};
    while (!todo.empty()) {
        const pid_t p = todo.back();
        todo.pop_back();
        for (pid_t c : children[p])
            if (out.insert(c).second) todo.push_back(c);
    }
    return out;
}

inline std::int64_t boot_ns() {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Stops every process below `root` and lets them go on when it goes. Until no new one appears
// once all are seen stopped: SIGSTOP is asynchronous, and a process sent it in the middle of
// fork() stops only after the fork, its child not in the listing taken before (a run under load
// recorded 4 processes where the test had paused 3, Σ PSS 17% apart).
class PausedTree {
  public:
    explicit PausedTree(pid_t root) {
        for (int round = 0; round < 20; ++round) {
            bool grew = false;
            for (pid_t pid : descendants(root))
                if (stopped_.insert(pid).second) {
                    ::kill(pid, SIGSTOP);
                    grew = true;
                }
            if (!grew) break;
            wait_stopped();
        }
    }
    ~PausedTree() {
        for (pid_t pid : stopped_)
            ::kill(pid, SIGCONT);
    }
    PausedTree(const PausedTree&) = delete;
    PausedTree& operator=(const PausedTree&) = delete;
    const std::set<pid_t>& processes() const { return stopped_; }
    // Whether the tree stands still: each process stopped (T), a zombie or gone. One that was
    // exiting when it was sent SIGSTOP is none of these (R or D in do_exit): it tears its memory
    // down while the recorder and the test read the tree, and its sharers' PSS moves with it.
    // Every thread counts: a worker whose main thread has exited shows Z while its other threads
    // still tear down the memory it shares (torch workers have threads; a moment with main
    // alone read main's PSS 1.1% below the test's own, read a moment later, in a clean-clone
    // run).
    bool still() const {
        for (pid_t pid : stopped_) {
            std::error_code ignored;
            for (const auto& task : std::filesystem::directory_iterator(
                     "/proc/" + std::to_string(pid) + "/task", ignored)) {
                auto stat = read_whole(task.path().string() + "/stat");
                if (!stat) continue;
                const auto close = stat->rfind(')');
                const char state = close + 2 < stat->size() ? (*stat)[close + 2] : '?';
                if (state != 'T' && state != 't' && state != 'Z' && state != 'X') return false;
            }
        }
        return true;
    }

  private:
    // Until each is seen stopped (state T), a zombie or gone.
    void wait_stopped() const {
        for (pid_t pid : stopped_)
            for (int i = 0; i < 2000; ++i) {
                auto stat = read_whole("/proc/" + std::to_string(pid) + "/stat");
                if (!stat) break;
                const auto close = stat->rfind(')');
                const char state = close + 2 < stat->size() ? (*stat)[close + 2] : '?';
                if (state == 'T' || state == 't' || state == 'Z' || state == 'X') break;
                std::this_thread::sleep_for(std::chrono::microseconds(500));
            }
    }
    std::set<pid_t> stopped_;
};

// Appends `text` as a marker line of the recording `db` and waits until the recorder says it
// took the sample the marker asked for; false after `timeout`.
inline bool acknowledged_sample(const std::string& db, const std::string& text,
                                std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const std::int64_t asked = boot_ns();
    {
        std::ofstream markers(db + ".markers", std::ios::app);
        markers << text << "\n";
        if (!markers.flush()) return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        std::istringstream line(read_whole(db + ".sampled").value_or(""));
        std::int64_t a = 0, b = 0;
        if (line >> a >> b && a == b && a >= asked) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
}

} // namespace loaderlens::test::paused
