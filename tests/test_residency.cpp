// SPDX-License-Identifier: MIT
// Page-cache residency of a file (PageCacheProbe) against the kernel's other witnesses: fincore,
// vmtouch and mincore on a private mapping of the test's own, for a file in known states, with
// each page-cache method (cachestat where the kernel has it, and mincore forced); the bucket
// layout; the dirty and writeback figures (cachestat only). What an unprivileged user gets, the
// evictions under a small memory cgroup and the fallbacks when the kernel refuses a method are in
// test_residency_access.cpp; the processes' side (ResidencySampler over forked children) in
// test_residency_process.cpp.
//
// Tolerances are zero: the file is this test's own, nothing else maps or reads it, and every
// witness reads the same page-cache tree. The machine evicts idle unmapped page cache after ~30 s,
// so each state is set and checked at once, and "the same moment" is ours, the oracles, then ours
// again, retried when ours moved in between.
#include "loaderlens/page_cache.hpp"
#include "precondition.hpp"
#include "residency_support.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <functional>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
namespace tt = boost::test_tools;

using namespace loaderlens::test::residency;

namespace {

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

// One moment's figures: ours (asked for cachestat: the kernel's best), the oracles, ours with
// mincore forced, ours again.
struct Witnesses {
    ProbeRead best, mincore;
    std::set<std::int64_t> oracle; // mincore on a private mapping of the test's own
    std::int64_t fincore = -1, vmtouch = -1, vmtouch_total = -1, best_again = -1;
    int attempts = 0;
};

Witnesses witness(const std::string& path, const BucketLayout& layout) {
    Witnesses w;
    for (w.attempts = 1; w.attempts <= 5; ++w.attempts) {
        w.best = probe(path, CacheMethod::cachestat, layout);
        w.fincore = fincore_pages(path);
        std::tie(w.vmtouch, w.vmtouch_total) = vmtouch_pages(path);
        w.oracle = cached_page_set(path);
        w.mincore = probe(path, CacheMethod::mincore, layout);
        w.best_again = probe(path, CacheMethod::cachestat, layout).totals.cached;
        if (w.best_again == w.best.totals.cached) break;
    }
    return w;
}

// The file's cached pages are `expected` (a count, or exactly these pages) for every witness, and
// both methods put them in the buckets where the oracle sees them.
void check_state(const char* state, const std::string& path, const BucketLayout& layout,
                 const std::function<void()>& set, const std::set<std::int64_t>* pages,
                 std::int64_t expected) {
    const Witnesses w = settled(path, expected, set, [&] { return witness(path, layout); });
    const std::int64_t best = w.best.totals.cached;
    BOOST_TEST_MESSAGE(state << ": " << to_string(w.best.method) << " " << best << ", fincore "
                             << w.fincore << ", vmtouch " << w.vmtouch << "/" << w.vmtouch_total
                             << ", private mincore " << w.oracle.size() << ", mincore probe "
                             << w.mincore.totals.cached << " (attempt " << w.attempts << ")");
    BOOST_TEST_CONTEXT(state) {
        BOOST_TEST(w.best_again == best); // else the state kept changing over 5 attempts
        BOOST_TEST(w.fincore == expected);
        BOOST_TEST(w.vmtouch == expected);
        BOOST_TEST(static_cast<std::int64_t>(w.oracle.size()) == expected);
        BOOST_TEST(w.vmtouch_total == layout.file_pages);
        for (const ProbeRead* r : {&w.best, &w.mincore}) {
            BOOST_TEST_CONTEXT(to_string(r->method)) {
                BOOST_TEST(r->totals.cached == expected);
                BOOST_TEST(sum(r->cached) == r->totals.cached);
                BOOST_TEST(r->cached == buckets_of(layout, w.oracle), tt::per_element());
                if (pages) BOOST_TEST(r->cached == buckets_of(layout, *pages), tt::per_element());
                if (r->method == CacheMethod::cachestat)
                    BOOST_TEST(sum(r->evicted) == r->totals.evicted.value_or(-1));
                else // mincore knows only what is cached
                    BOOST_TEST(!r->totals.evicted.has_value());
            }
        }
    }
}

bool have_program(const std::string& name) {
    return run({"/bin/sh", "-c", "command -v " + name}).exit_code == 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(residency)

BOOST_AUTO_TEST_CASE(cached_pages_agree_with_fincore_and_vmtouch, *LOADERLENS_MAY_SKIP) {
    if (!precondition(have_program("fincore"), "needs fincore (util-linux)", InCi::must_have) ||
        !precondition(have_program("vmtouch"), "needs vmtouch", InCi::must_have))
        return;
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
        for ([[maybe_unused]] CacheMethod method : methods) { // one probe per method asked
            for (const BucketLayout& layout : layouts) {
                BOOST_TEST_CONTEXT(when << ", " << to_string(r->method) << ", " << layout.count
                                        << " buckets") {
                    BOOST_TEST(r->totals.cached == static_cast<std::int64_t>(touched.size()));
                    BOOST_TEST(sum(r->cached) == r->totals.cached);
                    BOOST_TEST(r->cached == buckets_of(layout, touched), tt::per_element());
                    if (r->method == CacheMethod::cachestat) {
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
BOOST_AUTO_TEST_CASE(dirty_pages_until_fdatasync, *LOADERLENS_MAY_SKIP) {
    if (!precondition(kernel_offers_cachestat(),
                      "dirty and writeback counts come from cachestat(2), which this kernel does "
                      "not offer (Linux >= 6.5)",
                      InCi::may_lack))
        return;
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

BOOST_AUTO_TEST_SUITE_END()
