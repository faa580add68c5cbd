// SPDX-License-Identifier: MIT
// The recorder's own memory (issue 28, part 6): it is a process of the job, SLURM counts it.
// Properties that cannot fail by timing: the recorder's threads share one malloc arena (no 64 MiB
// per-thread heap in its maps), and unmapping idle file pages keeps every copy-on-write page.
// The sizes themselves are measured by bench/recorder_memory.cpp, not held to a bound here.
#include "loaderlens/own_memory.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <unistd.h>

using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

struct Mapping {
    unsigned long start = 0, end = 0;
    std::string perms, path;
    long rss_kb = 0, anonymous_kb = 0;
};

std::vector<Mapping> smaps_of(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/smaps");
    std::vector<Mapping> out;
    std::string line;
    while (std::getline(in, line)) {
        Mapping m;
        char perms[5] = {};
        int path_at = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx %4s %*s %*s %*s %n", &m.start, &m.end, perms,
                        &path_at) >= 3 &&
            path_at > 0) {
            m.perms = perms;
            m.path = line.substr(static_cast<std::size_t>(path_at));
            out.push_back(m);
        } else if (!out.empty()) {
            long kb = 0;
            if (std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) out.back().rss_kb = kb;
            if (std::sscanf(line.c_str(), "Anonymous: %ld kB", &kb) == 1)
                out.back().anonymous_kb = kb;
        }
    }
    return out;
}

const Mapping* mapping_at(const std::vector<Mapping>& maps, const void* address) {
    const auto a = reinterpret_cast<unsigned long>(address);
    for (const auto& m : maps)
        if (m.start <= a && a < m.end) return &m;
    return nullptr;
}

// glibc's per-thread arenas: an anonymous 64 MiB reservation aligned to 64 MiB (HEAP_MAX_SIZE),
// the part in use read-write, the rest PROT_NONE right after it.
int thread_arenas(const std::vector<Mapping>& maps) {
    constexpr unsigned long heap_max = 64UL << 20;
    int arenas = 0;
    for (std::size_t i = 0; i + 1 < maps.size(); ++i) {
        const Mapping& used = maps[i];
        const Mapping& rest = maps[i + 1];
        if (used.path.empty() && rest.path.empty() && used.start % heap_max == 0 &&
            used.perms == "rw-p" && rest.perms == "---p" && rest.start == used.end &&
            rest.end - used.start == heap_max)
            ++arenas;
    }
    return arenas;
}

void* map_file(const std::string& path, std::size_t bytes, int protection) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    void* p = ::mmap(nullptr, bytes, protection, MAP_PRIVATE, fd, 0);
    ::close(fd);
    BOOST_REQUIRE(p != MAP_FAILED);
    return p;
}

} // namespace

BOOST_AUTO_TEST_SUITE(own_memory)

// Before the fix the recorder's fast and deep threads each had their own arena (two 64 MiB
// reservations, 100-250 KiB touched in each) by the time they had taken one sample.
BOOST_AUTO_TEST_CASE(the_recorders_threads_share_one_malloc_arena) {
    TempDir dir;
    const std::string waits_for_its_sample =
        "echo m >> \"$LOADERLENS_MARKERS\"; "
        "until [ -s \"$LOADERLENS_SAMPLED\" ]; do sleep 0.01; done; echo sampled; exec sleep 60";
    Child recorder({cli_path(), "record", "-q", "-o", dir.file("r.db"), "--", "sh", "-c",
                    waits_for_its_sample});
    BOOST_REQUIRE(recorder.wait_for_line("sampled", 30s));
    // Both sampling threads have run (a marker runs every tier) and allocated by now.
    BOOST_TEST(thread_arenas(smaps_of(std::to_string(recorder.pid()))) == 0);
}

BOOST_AUTO_TEST_CASE(idle_file_pages_are_unmapped_and_copied_pages_kept) {
    TempDir dir;
    constexpr std::size_t bytes = 1 << 20;
    make_file(dir.file("text"), bytes);
    make_file(dir.file("relro"), bytes);
    // Like library text: read-only, private, every page read.
    auto* text = static_cast<const unsigned char*>(map_file(dir.file("text"), bytes, PROT_READ));
    unsigned sum_before = 0;
    for (std::size_t i = 0; i < bytes; i += 4096)
        sum_before += text[i];
    // Like RELRO: written (one page copied), then made read-only. Dropping it would bring the
    // file's bytes back in place of the relocated ones.
    auto* relro =
        static_cast<unsigned char*>(map_file(dir.file("relro"), bytes, PROT_READ | PROT_WRITE));
    const unsigned char original = relro[0];
    relro[0] = static_cast<unsigned char>(original ^ 0xff);
    BOOST_REQUIRE(::mprotect(relro, bytes, PROT_READ) == 0);
    {
        const auto maps = smaps_of("self");
        BOOST_REQUIRE(mapping_at(maps, text)->rss_kb >= 1000);
        BOOST_REQUIRE(mapping_at(maps, relro)->anonymous_kb > 0);
    }

    BOOST_TEST(loaderlens::drop_idle_file_pages() >= 1000);

    const auto maps = smaps_of("self");
    BOOST_TEST(mapping_at(maps, text)->rss_kb == 0);
    BOOST_TEST(mapping_at(maps, relro)->anonymous_kb > 0);
    BOOST_TEST(relro[0] == static_cast<unsigned char>(original ^ 0xff));
    unsigned sum_after = 0;
    for (std::size_t i = 0; i < bytes; i += 4096)
        sum_after += text[i];
    BOOST_TEST(sum_after == sum_before); // faulted back from the page cache
    ::munmap(const_cast<unsigned char*>(text), bytes);
    ::munmap(relro, bytes);
}

BOOST_AUTO_TEST_CASE(the_peak_rss_restarts_from_the_rss_of_now) {
    auto hwm_kb = [] {
        std::ifstream status("/proc/self/status");
        std::string line;
        while (std::getline(status, line))
            if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
        return -1L;
    };
    constexpr std::size_t bytes = 64UL << 20;
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    BOOST_REQUIRE(p != MAP_FAILED);
    std::memset(p, 1, bytes);
    ::munmap(p, bytes);
    const long before = hwm_kb();
    BOOST_REQUIRE(loaderlens::reset_peak_rss());
    BOOST_TEST(hwm_kb() <= before - 32 * mib_kb);
}

BOOST_AUTO_TEST_SUITE_END()
