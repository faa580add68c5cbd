// SPDX-License-Identifier: MIT
// RollupSampler keeps a PSS reading while nothing that moves it moved (rollup_sampler.hpp), and
// never longer than its bound. The oracle is /proc/PID/smaps_rollup's Pss line read here.
#include "loaderlens/rollup_sampler.hpp"
#include "residency_children.hpp"
#include "smaps_oracle.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;

namespace {

std::int64_t kernel_pss_kb(pid_t pid) {
    const auto kb = rollup_pss_kb(pid);
    if (!kb) BOOST_FAIL("no Pss in smaps_rollup of " << pid);
    return kb.value_or(-1);
}

const RollupSample& of(const std::vector<RollupSample>& samples, std::int64_t id) {
    for (const auto& s : samples)
        if (s.process_id == id) return s;
    BOOST_FAIL("no sample of process " << id);
    return samples.front();
}

bool close_to(std::int64_t value, std::int64_t oracle) {
    return std::abs(static_cast<double>(value - oracle)) <= 0.02 * static_cast<double>(oracle) + 64;
}

} // namespace

BOOST_AUTO_TEST_SUITE(pss_staleness)

// A child writes the pages it shares with its parent (copy-on-write): the parent's PSS rises
// although the parent itself did not move. Read at once, not after the bound.
BOOST_AUTO_TEST_CASE(a_copy_on_write_break_is_read_at_once) {
    constexpr std::size_t bytes = 32 << 20;
    Forked parent([](Forked& self) {
        auto* memory = static_cast<char*>(
            ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        std::memset(memory, 1, bytes);
        const pid_t child = ::fork();
        if (child == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL); // gone with the parent the test kills
            self.send("waiting");
            if (self.receive(60s) != "cow") ::_exit(0);
            for (std::size_t i = 0; i < bytes; i += 4096)
                memory[i] = 2;
            self.send("done");
            ::pause();
            ::_exit(0);
        }
        self.send("ready " + std::to_string(child));
        ::pause();
    });
    // Two lines on one pipe, from two processes: "ready PID" (the parent) and "waiting" (the
    // child), in either order.
    pid_t child = 0;
    bool waiting = false;
    for (int line = 0; line < 2; ++line) {
        const std::string text = parent.receive();
        if (text.starts_with("ready ")) child = std::stoi(text.substr(6));
        waiting = waiting || text == "waiting";
    }
    BOOST_REQUIRE(child > 0 && waiting);
    const std::vector<ProcessInfo> live{process(1, parent.pid()), process(2, child)};
    RollupSampler rollup(60'000); // a bound far away: only a move may cause a read
    Problems problems;

    std::vector<RollupSample> first, quiet, after;
    rollup.sample(live, first, problems);
    BOOST_TEST(rollup.read_last() == 2);
    // Nothing moves now (the child's first faults after fork are over once it waits): both
    // readings kept, at the latest on the third look.
    for (int look = 0; look < 3; ++look) {
        quiet.clear();
        rollup.sample(live, quiet, problems);
        if (rollup.read_last() == 0) break;
        std::this_thread::sleep_for(50ms);
    }
    BOOST_TEST(rollup.read_last() == 0);
    // Before: main's 32 MiB shared with the child, half each.
    BOOST_TEST(close_to(*of(quiet, 1).pss, kernel_pss_kb(parent.pid())));

    parent.send("cow");
    BOOST_REQUIRE(parent.receive() == "done");
    rollup.sample(live, after, problems);
    BOOST_TEST(rollup.read_last() == 2);
    BOOST_TEST(of(after, 1).age_ms == 0);
    const std::int64_t oracle = kernel_pss_kb(parent.pid());
    BOOST_TEST(close_to(*of(after, 1).pss, oracle),
               "parent PSS " << *of(after, 1).pss << " KiB, smaps_rollup " << oracle);
    BOOST_TEST(*of(after, 1).pss > *of(quiet, 1).pss + 12 * 1024); // it did rise (16 -> 32 MiB)
}

// A process outside the tree maps the tree's file: the tree's PSS halves while nothing in the
// tree moves. The kept reading is stale, but never older than the bound.
BOOST_AUTO_TEST_CASE(an_outside_sharer_is_seen_within_the_bound) {
    DataFile data;
    const std::uint64_t bytes = file_pages * page_size();
    std::vector<Touch> all;
    for (std::int64_t p = 0; p < file_pages; ++p)
        all.push_back({0, p});
    auto member = start_mapper({{.path = data.path, .length = bytes}}, all);
    const std::vector<ProcessInfo> live{process(1, member->pid())};
    constexpr std::int64_t bound_ms = 800, step_ms = 100;
    RollupSampler rollup(bound_ms);
    Problems problems;
    const auto sample = [&] {
        std::vector<RollupSample> out;
        rollup.sample(live, out, problems);
        BOOST_REQUIRE_EQUAL(out.size(), 1u);
        BOOST_TEST(out.front().age_ms < bound_ms);
        return out.front();
    };
    sample();
    // Until the reading agrees with the kernel again; returns how long that took (ms).
    const auto time_to_agree = [&] {
        const auto start = std::chrono::steady_clock::now();
        int kept = 0;
        for (;;) {
            const RollupSample s = sample();
            kept += rollup.read_last() == 0;
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
            if (close_to(*s.pss, kernel_pss_kb(member->pid()))) {
                BOOST_TEST_MESSAGE("agreed after " << waited << " ms, " << kept << " kept");
                return waited;
            }
            BOOST_REQUIRE_MESSAGE(waited <= bound_ms + 3 * step_ms,
                                  "still stale after " << waited << " ms");
            std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
        }
    };
    auto outside = start_mapper({{.path = data.path, .length = bytes}}, all); // comes
    time_to_agree();
    outside.reset(); // goes
    time_to_agree();
}

// Nothing outside the tree maps its files: the look outside (every bound) finds no change, so
// the still tree's reading is kept past the bound, and still agrees with the kernel. The member
// runs a private copy of python3: a child of this binary would share it with the other test
// binaries the machine may be running (outside mappers that could fault its pages: the bound).
BOOST_AUTO_TEST_CASE(a_still_tree_is_kept_past_the_bound_while_nothing_outside_maps_its_files) {
    DataFile data;
    const std::string python = data.dir.file("python3");
    std::filesystem::copy_file("/usr/bin/python3", python);
    std::filesystem::permissions(python, std::filesystem::perms::owner_all);
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0);
    const std::string script = "import mmap,os,sys,signal\n"
                               "f=open(sys.argv[1],'rb'); m=mmap.mmap(f.fileno(),0,"
                               "prot=mmap.PROT_READ)\n"
                               "s=sum(m[i] for i in range(0,len(m),4096))\n"
                               "os.write(int(sys.argv[2]),b'r')\n"
                               "while True: signal.pause()\n";
    const pid_t member = ::fork();
    if (member == 0) {
        ::close(ready[0]);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        const std::string fd = std::to_string(ready[1]);
        ::execl(python.c_str(), python.c_str(), "-c", script.c_str(), data.path.c_str(), fd.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(ready[1]);
    pollfd pfd{ready[0], POLLIN, 0};
    char byte = 0;
    const bool up = ::poll(&pfd, 1, 60'000) == 1 && ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    struct Reap {
        pid_t pid;
        ~Reap() {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    } reap{member};
    BOOST_REQUIRE_MESSAGE(up, "the python3 copy did not map the file");
    const std::vector<ProcessInfo> live{process(1, member)};
    constexpr std::int64_t bound_ms = 300;
    RollupSampler rollup(bound_ms, 60'000);
    Problems problems;
    std::vector<RollupSample> out;
    rollup.sample(live, out, problems);
    BOOST_REQUIRE_EQUAL(out.size(), 1u);
    if (!rollup.may_outlive()) {
        std::printf("LOADERLENS-SKIP: a process outside the tree maps one of its files\n");
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    int kept = 0, looks = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(4 * bound_ms)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        out.clear();
        rollup.sample(live, out, problems);
        ++looks;
        kept += rollup.read_last() == 0;
    }
    BOOST_REQUIRE_EQUAL(out.size(), 1u);
    BOOST_TEST_MESSAGE(kept << " of " << looks << " samples kept, the last " << out.front().age_ms
                            << " ms old");
    // The first looks may still see the member's last faults of its set-up.
    BOOST_TEST(out.front().age_ms > 2 * bound_ms);
    BOOST_TEST(close_to(*out.front().pss, kernel_pss_kb(member)));
}

BOOST_AUTO_TEST_SUITE_END()
