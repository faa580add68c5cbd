// SPDX-License-Identifier: MIT
// PageCacheProbe with cachestat keeps its per-bucket counts between reads and re-reads only the
// ranges whose counts moved (src/cachestat_buckets.hpp). Each read here is held against a fresh
// probe (which reads every bucket) and against the page set the test's own mincore sees, while
// the test evicts and reads back known pages; the number of cachestat calls shows the saving.
#include "loaderlens/page_cache.hpp"
#include "precondition.hpp"
#include "residency_support.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;
namespace tt = boost::test_tools;

namespace {

constexpr std::int64_t file_pages = 16384; // 64 MiB: 256 buckets of 64 pages
constexpr int buckets = 256;

void evict(const std::string& path, std::int64_t first_page, std::int64_t pages) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::posix_fadvise(fd, first_page * page_size(), pages * page_size(),
                                  POSIX_FADV_DONTNEED) == 0);
    ::close(fd);
}

// What a kept probe's read cost, and the buckets a fresh probe found (the oracle's).
struct Read {
    int calls = 0;
    BucketCounts cached, evicted;
};

// The kept probe's read equals a fresh probe's and the test's own mincore.
Read check_read(PageCacheProbe& kept, const std::string& path, const BucketLayout& layout) {
    BucketCounts cached, evicted;
    const auto totals = kept.read(layout, cached, &evicted);
    BOOST_REQUIRE(totals.has_value());
    PageCacheProbe fresh(path);
    Read read;
    const auto fresh_totals = fresh.read(layout, read.cached, &read.evicted);
    BOOST_REQUIRE(fresh_totals.has_value());
    BOOST_TEST(fresh.cachestat_calls() == buckets);
    BOOST_TEST(cached == read.cached, tt::per_element());
    BOOST_TEST(evicted == read.evicted, tt::per_element());
    BOOST_TEST(totals->cached == fresh_totals->cached);
    BOOST_TEST(totals->evicted.value_or(-1) == fresh_totals->evicted.value_or(-2));
    BOOST_TEST(cached == buckets_of(layout, cached_page_set(path)), tt::per_element());
    read.calls = kept.cachestat_calls();
    return read;
}

// Buckets whose cached or evicted count moved between two of the oracle's reads: any whose pages
// the machine's own reclaim evicted meanwhile (27 calls, a fourth bucket, in a run beside six
// builds on 2026-11-29) besides the two the test moves. The bound takes at least those two: the
// kernel may keep a range of a large folio cached that POSIX_FADV_DONTNEED was asked to drop (the
// oracle then sees fewer move, and the halving still looks for them: 16 calls).
int moved(const Read& before, const Read& after) {
    int n = 0;
    for (std::size_t b = 0; b < after.cached.size(); ++b)
        n += after.cached[b] != before.cached[b] || after.evicted[b] != before.evicted[b];
    return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cachestat_buckets)

BOOST_AUTO_TEST_CASE(reads_only_the_buckets_that_moved, *LOADERLENS_MAY_SKIP) {
    if (!precondition(kernel_offers_cachestat(),
                      "the incremental read is of cachestat(2), which this kernel does not offer "
                      "(Linux >= 6.5); mincore reads the whole file each time",
                      InCi::may_lack))
        return;
    TempDir dir;
    const std::string path = dir.file("data.bin");
    make_file(path, static_cast<std::size_t>(file_pages * page_size()));
    read_all(path);
    const BucketLayout layout = BucketLayout::make(file_pages, buckets);
    PageCacheProbe kept(path);
    BOOST_REQUIRE(kept.method() == CacheMethod::cachestat);

    BOOST_TEST(check_read(kept, path, layout).calls == buckets); // the first read: every bucket
    const Read still = check_read(kept, path, layout);
    BOOST_TEST(still.calls == 1); // nothing moved: the whole file once

    // Pages leave two buckets far apart: each is found by halving (8 levels of 256 buckets), and
    // so is any other bucket that moved meanwhile (the oracle counts them). One more may be
    // re-read: evicting pages advances the kernel's eviction clock, and bucket 10's "recently
    // evicted" count can age without a page moving (21 calls in a clean-clone CI run of b94be05
    // on 2026-11-26, against 17 for two buckets).
    evict(path, 10 * 64 + 5, 3);
    evict(path, 200 * 64, 64);
    const Read after_eviction = check_read(kept, path, layout);
    const int moved_by_eviction = moved(still, after_eviction);
    BOOST_TEST_MESSAGE("calls after evicting in 2 buckets: " << after_eviction.calls << " ("
                                                             << moved_by_eviction << " moved)");
    BOOST_TEST(after_eviction.calls <= 1 + (std::max(moved_by_eviction, 2) + 1) * 8);

    // Pages come back (their shadow entries go): found the same way, plus the bucket whose
    // "recently evicted" count may age meanwhile.
    read_pages_randomly(path, {200 * 64 + 1, 200 * 64 + 2});
    const Read after_refault = check_read(kept, path, layout);
    const int moved_by_refault = moved(after_eviction, after_refault);
    BOOST_TEST_MESSAGE("calls after reading back 2 pages: " << after_refault.calls << " ("
                                                            << moved_by_refault << " moved)");
    BOOST_TEST(after_refault.calls <= 1 + (std::max(moved_by_refault, 2) + 1) * 8);

    // A full read every CachestatBuckets::full_read_every reads bounds an unseen change.
    int full_reads = 0;
    for (int i = 0; i < 30; ++i)
        full_reads += check_read(kept, path, layout).calls == buckets;
    BOOST_TEST(full_reads == 1);
}

BOOST_AUTO_TEST_SUITE_END()
