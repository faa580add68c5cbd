// Page-cache residency of a file (PageCacheProbe) against the kernel's other witnesses: fincore and
// vmtouch for a file in known states, with cachestat(2) and with mincore forced; the bucket layout;
// the dirty and writeback figures; what an unprivileged user gets (unavailable, never a count); and
// evictions under a small memory cgroup. The processes' side (ResidencySampler over forked
// children) is in test_residency_process.cpp.
//
// Tolerances are zero: the file is this test's own, nothing else maps or reads it, and every
// witness reads the same page-cache tree. The machine evicts idle unmapped page cache after ~30 s,
// so each state is set and checked at once, and "the same moment" is ours, the oracles, then ours
// again, retried when ours moved in between.
#include "loaderlens/cgroup_sampler.hpp"
#include "loaderlens/page_cache.hpp"
#include "loaderlens/pagemap.hpp"
#include "residency_support.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <grp.h>
#include <map>
#include <numeric>
#include <poll.h>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
namespace fs = std::filesystem;
namespace tt = boost::test_tools;
using namespace std::chrono_literals;

using namespace loaderlens::test::residency;

namespace {

struct ProbeRead {
    CacheCounts totals;
    BucketCounts cached, evicted;
};

ProbeRead probe(const std::string& path, CacheMethod method, const BucketLayout& layout) {
    PageCacheProbe p(path, method);
    BOOST_REQUIRE_MESSAGE(p.method() == method,
                          path << ": " << to_string(p.method()) << " (" << p.problem() << ")");
    ProbeRead out;
    auto counts = p.read(layout, out.cached, &out.evicted);
    BOOST_REQUIRE_MESSAGE(counts, p.problem());
    out.totals = *counts;
    return out;
}

// Sets a page-cache state and reads it; again (up to 3 times) unless the file's cached pages were
// `expected` both before and after the read. DAMON on this machine pages out idle physical memory
// every 5 s and may take unmapped pages just cached; nothing else adds pages to these files, so an
// unchanged count is an unchanged state.
template <class Read>
auto settled(const std::string& path, std::int64_t expected, const std::function<void()>& set,
             Read read) {
    for (int attempt = 1;; ++attempt) {
        set();
        const std::int64_t before = cached_pages(path);
        auto result = read();
        const std::int64_t after = cached_pages(path);
        if ((before == expected && after == expected) || attempt == 3) return result;
        BOOST_TEST_MESSAGE(path << ": " << before << " then " << after << " pages cached, not "
                                << expected << ": set again");
    }
}

// fincore's PAGES column alone: one line holding a number.
std::int64_t fincore_pages(const std::string& path) {
    RunResult r = run({"fincore", "--raw", "--noheadings", "--output", "PAGES", path});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "fincore: " << r.exit_code << " " << r.err);
    std::string text = r.out;
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    text.erase(0, text.find_first_not_of(' '));
    const bool number = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
    });
    BOOST_REQUIRE_MESSAGE(number, "fincore printed '" << r.out << "'");
    return std::stoll(text);
}

// vmtouch's "Resident Pages: X/Y  ..." line: X and Y.
std::pair<std::int64_t, std::int64_t> vmtouch_pages(const std::string& path) {
    RunResult r = run({"vmtouch", path});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, "vmtouch: " << r.exit_code << " " << r.err);
    const std::string key = "Resident Pages:";
    const std::size_t at = r.out.find(key);
    BOOST_REQUIRE_MESSAGE(at != std::string::npos, "vmtouch printed '" << r.out << "'");
    std::istringstream in(r.out.substr(at + key.size()));
    std::int64_t resident = -1, total = -1;
    char slash = 0;
    in >> resident >> slash >> total;
    BOOST_REQUIRE_MESSAGE(in && slash == '/', "vmtouch printed '" << r.out << "'");
    return {resident, total};
}

// One moment's figures: ours (cachestat), the oracles, ours with mincore, ours again.
struct Witnesses {
    ProbeRead ours, mincore;
    std::int64_t fincore = -1, vmtouch = -1, vmtouch_total = -1, ours_again = -1;
    int attempts = 0;
};

Witnesses witness(const std::string& path, const BucketLayout& layout) {
    Witnesses w;
    for (w.attempts = 1; w.attempts <= 5; ++w.attempts) {
        w.ours = probe(path, CacheMethod::cachestat, layout);
        w.fincore = fincore_pages(path);
        std::tie(w.vmtouch, w.vmtouch_total) = vmtouch_pages(path);
        w.mincore = probe(path, CacheMethod::mincore, layout);
        w.ours_again = probe(path, CacheMethod::cachestat, layout).totals.cached;
        if (w.ours_again == w.ours.totals.cached) break;
    }
    return w;
}

// The file's cached pages are `expected` (a count, or exactly these pages) for every witness.
void check_state(const char* state, const std::string& path, const BucketLayout& layout,
                 const std::function<void()>& set, const std::set<std::int64_t>* pages,
                 std::int64_t expected) {
    const Witnesses w = settled(path, expected, set, [&] { return witness(path, layout); });
    const std::int64_t ours = w.ours.totals.cached;
    BOOST_TEST_MESSAGE(state << ": cachestat " << ours << ", fincore " << w.fincore << ", vmtouch "
                             << w.vmtouch << "/" << w.vmtouch_total << ", mincore "
                             << w.mincore.totals.cached << " (attempt " << w.attempts << ")");
    BOOST_TEST_CONTEXT(state) {
        BOOST_TEST(w.ours_again == ours); // else the state kept changing over 5 attempts
        BOOST_TEST(ours == expected);
        BOOST_TEST(w.fincore == ours);
        BOOST_TEST(w.vmtouch == ours);
        BOOST_TEST(w.vmtouch_total == layout.file_pages);
        BOOST_TEST(w.mincore.totals.cached == w.fincore);
        BOOST_TEST(w.mincore.totals.cached == w.vmtouch);
        BOOST_TEST(w.mincore.cached == w.ours.cached, tt::per_element());
        BOOST_TEST(sum(w.ours.cached) == ours);
        BOOST_TEST(sum(w.mincore.cached) == w.mincore.totals.cached);
        BOOST_TEST(sum(w.ours.evicted) == *w.ours.totals.evicted);
        if (pages) BOOST_TEST(w.ours.cached == buckets_of(layout, *pages), tt::per_element());
    }
}

bool write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

// Reads a forked child's report (key=value lines) until it closes the pipe, and reaps it.
std::map<std::string, std::string> collect_report(pid_t pid, int fd) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, 100);
        if (ready < 0) break;
        if (ready == 0) continue;
        char buffer[4096];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) break; // EOF: the child is done
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    std::map<std::string, std::string> report;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (auto eq = line.find('='); eq != std::string::npos)
            report[line.substr(0, eq)] = line.substr(eq + 1);
    return report;
}

} // namespace

BOOST_AUTO_TEST_SUITE(residency)

BOOST_AUTO_TEST_CASE(cached_pages_agree_with_fincore_and_vmtouch) {
    TempDir dir;
    const std::string path = dir.file("data.bin");
    // 64 MiB and 5 pages: the forced mincore reads 16384 pages (64 MiB) per call, so the last
    // pages are in a second call, and 16389 pages do not divide into 256 buckets.
    const std::int64_t pages = (64 << 20) / page_size() + 5;
    make_file(path, static_cast<std::size_t>(pages * page_size()));
    const BucketLayout layout = BucketLayout::make(pages, 256);
    BOOST_REQUIRE(layout.bucket_pages == 65);

    const std::set<std::int64_t> none, touched = spread_pages(pages, 300);
    check_state(
        "cold", path, layout, [&] { make_cold(path); }, &none, 0);
    check_state(
        "random pages", path, layout,
        [&] {
            make_cold(path);
            read_pages_randomly(path, touched);
        },
        &touched, 300);
    check_state(
        "read whole", path, layout, [&] { read_all(path); }, nullptr, pages);
}

BOOST_AUTO_TEST_CASE(bucket_layout_tiles_the_file) {
    BucketLayout l = BucketLayout::make(10, 4);
    BOOST_TEST(l.bucket_pages == 3);
    BOOST_TEST(l.count == 4);
    BOOST_TEST(l.pages_in(3) == 1);
    l = BucketLayout::make(1001, 8);
    BOOST_TEST(l.bucket_pages == 126);
    BOOST_TEST(l.count == 8);
    BOOST_TEST(l.pages_in(7) == 119);
    l = BucketLayout::make(3, 256); // fewer pages than buckets: one page each
    BOOST_TEST(l.bucket_pages == 1);
    BOOST_TEST(l.count == 3);
    l = BucketLayout::make(16384, 1);
    BOOST_TEST(l.count == 1);
    BOOST_TEST(l.pages_in(0) == 16384);
    l = BucketLayout::make(0, 8);
    BOOST_TEST(l.count == 0);

    // Every small case: at most `wanted` buckets (at least 1 wanted), equal but the last, none
    // empty, covering [0, file_pages) once, and bucket_of agreeing with first_page.
    int failures = 0;
    std::string first_failure;
    for (std::int64_t file_pages = 0; file_pages <= 300; ++file_pages) {
        for (int wanted = -1; wanted <= 40; ++wanted) {
            l = BucketLayout::make(file_pages, wanted);
            bool ok = l.count <= std::max(wanted, 1) && (l.count == 0) == (file_pages == 0);
            std::int64_t covered = 0;
            for (int b = 0; b < l.count && ok; ++b) {
                const std::int64_t n = l.pages_in(b);
                ok = n >= 1 && (b == l.count - 1 || n == l.bucket_pages) &&
                     l.first_page(b) == covered && l.bucket_of(l.first_page(b)) == b &&
                     l.bucket_of(l.first_page(b) + n - 1) == b;
                covered += n;
            }
            if (ok && covered == file_pages) continue;
            if (!failures++)
                first_failure = std::to_string(file_pages) + " pages, " + std::to_string(wanted) +
                                " wanted: " + std::to_string(l.count) + " x " +
                                std::to_string(l.bucket_pages);
        }
    }
    BOOST_TEST(failures == 0, failures << " bad layouts, the first: " << first_failure);
}

BOOST_AUTO_TEST_CASE(cache_buckets_count_the_pages_where_they_are) {
    TempDir dir;
    const std::string path = dir.file("odd.bin");
    const std::int64_t pages = 1001; // 1000 pages and 100 bytes
    make_file(path, static_cast<std::size_t>(1000 * page_size() + 100));
    const BucketLayout eight = BucketLayout::make(pages, 8), one = BucketLayout::make(pages, 1),
                       each = BucketLayout::make(pages, 4096);
    BOOST_REQUIRE(eight.bucket_pages == 126);
    BOOST_REQUIRE(each.count == 1001);

    std::set<std::int64_t> touched{630, 631, 700, 755}; // bucket 5 of eight: pages [630, 756)
    const std::vector<CacheMethod> methods{CacheMethod::cachestat, CacheMethod::mincore};
    const std::vector<BucketLayout> layouts{eight, one, each};
    auto check = [&](const char* when) {
        const auto set = [&] {
            make_cold(path);
            read_pages_randomly(path, touched);
        };
        const auto reads = settled(path, static_cast<std::int64_t>(touched.size()), set, [&] {
            std::vector<ProbeRead> out;
            for (CacheMethod method : methods)
                for (const BucketLayout& layout : layouts)
                    out.push_back(probe(path, method, layout));
            return out;
        });
        auto r = reads.begin();
        for (CacheMethod method : methods) {
            for (const BucketLayout& layout : layouts) {
                BOOST_TEST_CONTEXT(when << ", " << to_string(method) << ", " << layout.count
                                        << " buckets") {
                    BOOST_TEST(r->totals.cached == static_cast<std::int64_t>(touched.size()));
                    BOOST_TEST(sum(r->cached) == r->totals.cached);
                    BOOST_TEST(r->cached == buckets_of(layout, touched), tt::per_element());
                    if (method == CacheMethod::cachestat) {
                        BOOST_TEST(r->evicted.size() == static_cast<std::size_t>(layout.count));
                        BOOST_TEST(sum(r->evicted) == r->totals.evicted.value_or(-1));
                        BOOST_TEST(r->totals.dirty.value_or(-1) == 0);
                    } else { // mincore knows only what is cached
                        BOOST_TEST(r->evicted.empty());
                        BOOST_TEST(!r->totals.dirty.has_value());
                        BOOST_TEST(!r->totals.evicted.has_value());
                    }
                }
                ++r;
            }
        }
    };
    check("bucket 5 only");
    touched.insert(1000); // the last, partial page: the last, shorter bucket
    check("and the last page");

    const std::string tiny = dir.file("tiny.bin"); // 3 pages and 1 byte: 4 buckets of 1 page
    make_file(tiny, static_cast<std::size_t>(3 * page_size() + 1));
    make_cold(tiny);
    const BucketLayout four = BucketLayout::make(4, 256);
    BOOST_REQUIRE(four.count == 4);
    const auto reads = settled(
        tiny, 4, [&] { read_all(tiny); },
        [&] {
            return std::vector<ProbeRead>{probe(tiny, CacheMethod::cachestat, four),
                                          probe(tiny, CacheMethod::mincore, four)};
        });
    for (const ProbeRead& r : reads) {
        BOOST_TEST(r.cached == BucketCounts({1, 1, 1, 1}), tt::per_element());
        BOOST_TEST(r.totals.cached == 4);
    }
}

// cachestat counts dirty (and writeback) pages per folio: a page written into a large folio makes
// the whole folio dirty. Page-sized writes into a cold file allocate order-0 folios, so there the
// dirty pages are exactly the written ones; into a file read sequentially (large folios, naturally
// aligned, at most 2 MiB) they are at least the written pages and at most their 2 MiB windows.
BOOST_AUTO_TEST_CASE(dirty_pages_until_fdatasync) {
    TempDir dir;
    const std::string path = dir.file("written.bin");
    const std::int64_t pages = 2048;
    make_file(path, static_cast<std::size_t>(pages * page_size()));
    const BucketLayout layout = BucketLayout::make(pages, 16);
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    std::set<std::int64_t> written{0, 1, 2, 500, 2047}, windows;
    for (std::int64_t p = 1024; p < 1100; ++p)
        written.insert(p);
    const std::int64_t folio_max = (2 << 20) / page_size();
    for (std::int64_t p : written)
        for (std::int64_t q = p / folio_max * folio_max; q < (p / folio_max + 1) * folio_max; ++q)
            if (q < pages) windows.insert(q);
    const auto n = static_cast<std::int64_t>(written.size());
    const std::vector<char> content(static_cast<std::size_t>(page_size()), 'w');

    for (bool warm : {false, true}) {
        BOOST_TEST_CONTEXT((warm ? "warm file" : "cold file")) {
            ProbeRead dirty;
            // Written pages stay dirty until the flusher (dirty_expire_centisecs: 30 s here) or
            // someone's sync(2) writes them back: in that (outside) case, retry, no slack.
            for (int attempt = 0; attempt < 3; ++attempt) {
                make_cold(path); // written back and dropped
                if (warm) read_all(path);
                ProbeRead clean = probe(path, CacheMethod::cachestat, layout);
                BOOST_TEST(*clean.totals.dirty == 0);
                BOOST_TEST(*clean.totals.writeback == 0);
                for (std::int64_t p : written)
                    BOOST_REQUIRE(::pwrite(fd, content.data(), content.size(), p * page_size()) ==
                                  static_cast<ssize_t>(content.size()));
                dirty = probe(path, CacheMethod::cachestat, layout);
                if (*dirty.totals.dirty >= n) break;
            }
            BOOST_TEST_MESSAGE((warm ? "warm" : "cold")
                               << " file: " << n << " pages written, dirty " << *dirty.totals.dirty
                               << ", writeback " << *dirty.totals.writeback
                               << ", their 2 MiB windows " << windows.size());
            if (!warm) BOOST_TEST(*dirty.totals.dirty == n);
            BOOST_TEST(*dirty.totals.dirty >= n);
            BOOST_TEST(*dirty.totals.dirty <= static_cast<std::int64_t>(windows.size()));

            BOOST_REQUIRE(::fdatasync(fd) == 0); // waits for the writeback to finish
            ProbeRead synced = probe(path, CacheMethod::cachestat, layout);
            BOOST_TEST(*synced.totals.dirty == 0);
            BOOST_TEST(*synced.totals.writeback == 0);
        }
    }
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(unprivileged_user_gets_unavailable_never_a_count) {
    if (::geteuid() != 0) {
        BOOST_TEST_MESSAGE("skipped: needs root to become nobody");
        return;
    }
    TempDir dir;
    fs::permissions(dir.path(), fs::perms(0755)); // nobody may look up the files
    const std::string readable = dir.file("readable.bin"), secret = dir.file("secret.bin");
    const std::int64_t pages = 1024;
    make_file(readable, static_cast<std::size_t>(pages * page_size()));
    make_file(secret, 4096);
    fs::permissions(readable, fs::perms(0644));
    fs::permissions(secret, fs::perms(0600));
    make_cold(readable);
    const BucketLayout layout = BucketLayout::make(pages, 8);
    // A page that is present in the test process (and, after the fork, at the same address).
    const auto own_page = reinterpret_cast<std::uint64_t>(&layout) & ~std::uint64_t{4095};
    const pid_t test_pid = ::getpid();

    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        std::string out;
        auto put = [&](const std::string& key, const std::string& value) {
            out += key + "=" + value + "\n";
        };
        if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
            put("uid", std::string("setuid failed: ") + std::strerror(errno));
        } else {
            put("uid", std::to_string(::geteuid()));
            const int readable_fd = ::open(readable.c_str(), O_RDONLY);
            put("readable.open", readable_fd >= 0 ? "ok" : std::strerror(errno));
            for (CacheMethod method : {CacheMethod::cachestat, CacheMethod::mincore}) {
                PageCacheProbe p(readable, method);
                BucketCounts cached;
                auto counts = p.read(layout, cached);
                const std::string name = std::string("readable.") + to_string(method);
                put(name + ".method", to_string(p.method()));
                put(name + ".problem", p.problem());
                put(name + ".count", counts ? std::to_string(counts->cached) : "none");
            }
            PageCacheProbe p(secret);
            put("secret.method", to_string(p.method()));
            put("secret.problem", p.problem());
            // The kernel's rule that the probe relies on: EPERM from cachestat, and a mincore
            // that calls every page resident.
            const int fd = readable_fd;
            struct {
                std::uint64_t off, len;
            } range{0, 0};
            std::uint64_t cs[5] = {};
            put("kernel.cachestat",
                ::syscall(451, fd, &range, cs, 0) == 0 ? "ok" : std::strerror(errno));
            const auto bytes = static_cast<std::size_t>(pages * page_size());
            void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
            std::vector<unsigned char> vec(static_cast<std::size_t>(pages));
            if (map != MAP_FAILED && ::mincore(map, bytes, vec.data()) == 0)
                put("kernel.mincore",
                    std::to_string(std::count_if(vec.begin(), vec.end(),
                                                 [](unsigned char v) { return v & 1; })));
            PagemapReader reader(test_pid);
            int runs = 0;
            const bool ok = reader.for_each_present(own_page, own_page + 4096,
                                                    [&](std::uint64_t, std::uint64_t) { ++runs; });
            put("pagemap.error", std::to_string(reader.error()));
            put("pagemap.ok", ok ? "true" : "false");
            put("pagemap.runs", std::to_string(runs));
        }
        const ssize_t ignored = ::write(fds[1], out.data(), out.size());
        (void)ignored;
        ::_exit(0);
    }
    ::close(fds[1]);
    auto report = collect_report(pid, fds[0]);
    BOOST_REQUIRE_EQUAL(report["uid"], "65534");
    if (report["readable.open"] != "ok") { // e.g. a $TMPDIR below a directory nobody cannot enter
        BOOST_TEST_MESSAGE("skipped: nobody cannot open " << readable << ": "
                                                          << report["readable.open"]);
        return;
    }
    for (const char* method : {"cachestat", "mincore"}) {
        BOOST_TEST_CONTEXT("preferred " << method) {
            const std::string name = std::string("readable.") + method;
            BOOST_TEST(report[name + ".method"] == "unavailable");
            BOOST_TEST(report[name + ".count"] == "none");
            BOOST_TEST(report[name + ".problem"].find("only to its owner") != std::string::npos,
                       "problem: '" << report[name + ".problem"] << "'");
        }
    }
    BOOST_TEST(report["secret.method"] == "unavailable");
    BOOST_TEST(report["secret.problem"] == "cannot open " + secret + ": Permission denied");
    // What a naive reading would have said: 100% cached, while the file is cold.
    BOOST_TEST(report["kernel.cachestat"] == std::strerror(EPERM));
    BOOST_TEST(report["kernel.mincore"] == std::to_string(pages));
    BOOST_TEST(cached_pages(readable) == 0);
    BOOST_TEST(report["pagemap.error"] != "0");
    BOOST_TEST(report["pagemap.ok"] == "false");
    BOOST_TEST(report["pagemap.runs"] == "0");
    BOOST_TEST_MESSAGE("as nobody: " << report["readable.cachestat.problem"] << "; pagemap errno "
                                     << report["pagemap.error"] << "; the kernel's mincore said "
                                     << report["kernel.mincore"] << "/" << pages << " resident");
}

BOOST_AUTO_TEST_CASE(evictions_under_a_small_memory_cgroup) {
    auto own = locate_memory_cgroup(::getpid());
    if (::geteuid() != 0 || !own || own->version != "v1") {
        BOOST_TEST_MESSAGE("skipped: needs root and a cgroup v1 memory hierarchy");
        return;
    }
    const fs::path group =
        fs::path(own->directory) / ("loaderlens-residency-" + std::to_string(::getpid()));
    std::error_code error;
    if (!fs::create_directory(group, error)) {
        BOOST_TEST_MESSAGE("skipped: cannot create a cgroup under " << own->directory);
        return;
    }
    struct Cleanup {
        fs::path group;
        pid_t member = -1;
        ~Cleanup() {
            if (member > 0) {
                ::kill(member, SIGKILL);
                ::waitpid(member, nullptr, 0);
            }
            std::error_code ignored;
            fs::remove(group, ignored); // rmdir: a cgroup directory holds only kernel files
        }
    } cleanup{group};
    const std::int64_t limit_bytes = 32 << 20;
    if (!write_file(group / "memory.limit_in_bytes", std::to_string(limit_bytes))) {
        BOOST_TEST_MESSAGE("skipped: cannot set a memory limit on " << group);
        return;
    }

    TempDir dir;
    const std::string path = dir.file("big.bin");
    const std::int64_t pages = (128 << 20) / page_size();
    make_file(path, static_cast<std::size_t>(pages * page_size()));
    make_cold(path);

    int go[2];
    BOOST_REQUIRE(::pipe2(go, O_CLOEXEC) == 0);
    std::vector<char> buffer(1 << 20);
    cleanup.member = ::fork();
    BOOST_REQUIRE(cleanup.member >= 0);
    if (cleanup.member == 0) { // reads the file twice once it is in the cgroup
        char byte;
        if (::read(go[0], &byte, 1) != 1) ::_exit(2);
        for (int pass = 0; pass < 2; ++pass) {
            const int fd = ::open(path.c_str(), O_RDONLY);
            while (::read(fd, buffer.data(), buffer.size()) > 0) {
            }
            ::close(fd);
        }
        ::_exit(0);
    }
    ::close(go[0]);
    const auto start = std::chrono::steady_clock::now();
    const bool joined = write_file(group / "cgroup.procs", std::to_string(cleanup.member));
    BOOST_REQUIRE(::write(go[1], "g", 1) == 1);
    ::close(go[1]);
    BOOST_REQUIRE(joined);
    int status = -1;
    while (::waitpid(cleanup.member, &status, WNOHANG) == 0 &&
           std::chrono::steady_clock::now() - start < 40s)
        std::this_thread::sleep_for(20ms);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                          "reader: status " << status << " after " << seconds << " s");
    cleanup.member = -1;

    const BucketLayout layout = BucketLayout::make(pages, 64);
    ProbeRead r = probe(path, CacheMethod::cachestat, layout);
    const auto nonzero =
        std::count_if(r.evicted.begin(), r.evicted.end(), [](std::int32_t n) { return n > 0; });
    BOOST_TEST_MESSAGE("after two reads of "
                       << pages << " pages in " << limit_bytes / page_size() << " pages of cgroup ("
                       << seconds << " s): cached " << r.totals.cached << ", evicted "
                       << *r.totals.evicted << " in " << nonzero << "/" << layout.count
                       << " buckets, recently evicted " << *r.totals.recently_evicted);
    BOOST_TEST(*r.totals.evicted > 0);
    BOOST_TEST(nonzero > 0);
    BOOST_TEST(sum(r.evicted) == *r.totals.evicted);
    BOOST_TEST(sum(r.cached) == r.totals.cached);
    // A page's slot in the page cache holds the page, or the shadow of its eviction, or nothing.
    int full = 0;
    for (int b = 0; b < layout.count; ++b) {
        const auto i = static_cast<std::size_t>(b);
        BOOST_TEST(r.cached[i] + r.evicted[i] <= layout.pages_in(b),
                   "bucket " << b << ": " << r.cached[i] << " cached + " << r.evicted[i]
                             << " evicted > " << layout.pages_in(b) << " pages");
        full += r.cached[i] + r.evicted[i] == layout.pages_in(b);
    }
    BOOST_TEST_MESSAGE(full << " buckets with every page cached or evicted");
    // The pages still cached are charged to the cgroup, whose limit is a hard one.
    BOOST_TEST(r.totals.cached <= limit_bytes / page_size());
}

BOOST_AUTO_TEST_SUITE_END()
