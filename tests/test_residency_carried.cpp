// SPDX-License-Identifier: MIT
// Residency in rotation (issue 31): once reading a file's every bucket costs more than
// ResidencyOptions::cache_exact_limit_us (0 here: always), a run re-reads the buckets where the
// tree's present pages moved and a rotating slice of the others; the rest carry their last read,
// and the sample says how many buckets it read and how old the oldest carried read is.
//
// The file is cached by its writer (small folios, the expensive case), then its cache is changed
// where the sampler is not told: evicted with POSIX_FADV_DONTNEED, read by the test process (not
// in the tree). After each sample returns, the test's own mincore (the oracle) is held against the
// figure: a bucket that differs must be a carried one (the sample says it read fewer than all),
// carried at least as long as the change is old; within cache_rotation_runs samples every bucket
// is right again. A page a process of the tree maps is cached: where its present pages moved, the
// very next sample is right.
#include "precondition.hpp"
#include "residency_children.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fcntl.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;

namespace {

constexpr int buckets = 64; // of 256 pages: 64 MiB
constexpr int rotation_runs = 8;

// The sampler's clock, in the same unit and rounding.
std::int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

ResidencyOptions rotating(const std::string& path, CacheMethod method = CacheMethod::cachestat) {
    ResidencyOptions o;
    o.buckets = buckets;
    o.files = {path};
    o.cache_method = method;
    o.cache_exact_limit_us = 0;
    o.cache_rotation_runs = rotation_runs;
    return o;
}

void written_back(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::fdatasync(fd) == 0); // no writeback moving the counts meanwhile
    ::close(fd);
}

void evict_all(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    ::close(fd);
}

int differing(const BucketCounts& a, const BucketCounts& b) {
    int n = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
        n += a[i] != b[i];
    return n;
}

// Samples until every bucket agrees with the oracle, at most rotation_runs times after the
// change made at `changed_ms`: each sample that is wrong somewhere says it carried, and for at
// least as long as the change is old. Returns the samples it took.
int samples_until_right(Follower& f, const ResidencyFile& file, const std::string& path,
                        std::int64_t changed_ms) {
    for (int k = 1; k <= rotation_runs; ++k) {
        const std::int64_t before = steady_ms();
        f.sample({});
        const CacheResidency* cache = f.cache(file.id);
        BOOST_REQUIRE(cache);
        const BucketCounts truth = buckets_of(file.layout, cached_page_set(path));
        const int wrong = differing(cache->buckets, truth);
        BOOST_TEST_MESSAGE("sample " << k << ": read " << cache->read_buckets.value_or(-1)
                                     << " buckets, carried " << cache->carried_age_ms.value_or(-1)
                                     << " ms, " << wrong << " buckets differ from mincore");
        BOOST_REQUIRE(cache->read_buckets && cache->carried_age_ms);
        // The slice alone is 8 buckets of 64; nothing the tree maps moved.
        BOOST_TEST(*cache->read_buckets == buckets / rotation_runs);
        if (wrong == 0) return k;
        BOOST_TEST(!cache->all_read_now());
        BOOST_TEST(*cache->carried_age_ms >= before - changed_ms);
        // A bucket read since the change is right: at most the unread ones differ.
        BOOST_TEST(wrong <= buckets - k * (buckets / rotation_runs));
    }
    return rotation_runs + 1;
}

} // namespace

BOOST_AUTO_TEST_SUITE(residency_carried)

BOOST_AUTO_TEST_CASE(changes_the_tree_did_not_make_are_carried_then_read, *LOADERLENS_MAY_SKIP) {
    if (!precondition(kernel_offers_cachestat(),
                      "the rotation is of cachestat(2) reads, which this kernel does not offer "
                      "(Linux >= 6.5); mincore reads every page each time",
                      InCi::may_lack))
        return;
    TempDir dir;
    const std::string path = dir.file("written.bin");
    make_file(path, static_cast<std::size_t>(file_pages * page_size())); // cached by its writer
    written_back(path);
    Follower f(rotating(path));

    f.sample({});
    const ResidencyFile* file = f.file(path);
    BOOST_REQUIRE(file);
    BOOST_REQUIRE(file->method == CacheMethod::cachestat);
    BOOST_REQUIRE(file->layout.count == buckets);
    const CacheResidency* first = f.cache(file->id);
    BOOST_REQUIRE(first);
    BOOST_TEST(first->read_buckets.value_or(-1) == buckets); // the first read: every bucket
    BOOST_TEST(first->carried_age_ms.value_or(-1) == 0);
    BOOST_TEST(first->totals.cached > file_pages / 2);

    // Evicted behind the sampler's back: the buckets come right 8 per sample.
    const std::int64_t evicted_ms = steady_ms();
    evict_all(path);
    BOOST_REQUIRE(cached_pages(path) == 0);
    BOOST_TEST(samples_until_right(f, *file, path, evicted_ms) <= rotation_runs);

    // Read back by a process outside the tree (this one): found the same way.
    const std::set<std::int64_t> read = spread_pages(file_pages, 200);
    const std::int64_t read_ms = steady_ms();
    read_pages_randomly(path, read);
    BOOST_TEST(samples_until_right(f, *file, path, read_ms) <= rotation_runs);
    BOOST_TEST(f.cache(file->id)->totals.cached == static_cast<std::int64_t>(read.size()));
}

BOOST_AUTO_TEST_CASE(where_the_tree_faulted_pages_in_the_next_sample_is_right,
                     *LOADERLENS_MAY_SKIP) {
    if (!precondition(kernel_offers_cachestat(),
                      "the rotation is of cachestat(2) reads, which this kernel does not offer "
                      "(Linux >= 6.5)",
                      InCi::may_lack))
        return;
    DataFile data; // 64 MiB, cold
    Follower f(rotating(data.path));
    f.sample({});
    const ResidencyFile* file = f.file(data.path);
    BOOST_REQUIRE(file);
    f.sample({}); // in rotation from here

    // A worker of the tree faults pages in across the file (MADV_RANDOM: exactly those pages).
    const std::set<std::int64_t> touched = spread_pages(file_pages, 40);
    auto child = start_mapper({{.path = data.path,
                                .length = static_cast<std::uint64_t>(file_pages) *
                                          static_cast<std::uint64_t>(page_size())}},
                              touches_of(0, touched));
    const std::vector<ProcessInfo> live{process(3, child->pid())};
    f.sample(live);
    const CacheResidency* cache = f.cache(file->id);
    BOOST_REQUIRE(cache);
    const BucketCounts truth = buckets_of(file->layout, cached_page_set(data.path));
    const BucketCounts present = buckets_of(file->layout, touched);
    int touched_buckets = 0;
    for (std::size_t b = 0; b < truth.size(); ++b)
        if (present[b] > 0) {
            ++touched_buckets;
            BOOST_TEST(cache->buckets[b] == truth[b], "bucket " << b);
        }
    BOOST_TEST_MESSAGE("read " << cache->read_buckets.value_or(-1) << " buckets, "
                               << touched_buckets << " touched");
    BOOST_TEST(cache->read_buckets.value_or(0) >= touched_buckets);
    BOOST_TEST(cache->totals.cached == static_cast<std::int64_t>(touched.size()));

    // Nothing moved since: the next sample reads the slice alone.
    f.sample(live);
    BOOST_TEST(f.cache(file->id)->read_buckets.value_or(-1) == buckets / rotation_runs);
}

// mincore has no counts to keep between samples: every sample reads every page, whatever the plan.
BOOST_AUTO_TEST_CASE(mincore_reads_every_bucket_every_time) {
    TempDir dir;
    const std::string path = dir.file("written.bin");
    make_file(path, static_cast<std::size_t>(file_pages * page_size()));
    Follower f(rotating(path, CacheMethod::mincore));
    for (int k = 0; k < 3; ++k) {
        f.sample({});
        const ResidencyFile* file = f.file(path);
        BOOST_REQUIRE(file);
        const CacheResidency* cache = f.cache(file->id);
        BOOST_REQUIRE(cache);
        BOOST_TEST(cache->read_buckets.value_or(-1) == buckets);
        BOOST_TEST(cache->carried_age_ms.value_or(-1) == 0);
        BOOST_TEST(cache->all_read_now());
    }
}

BOOST_AUTO_TEST_SUITE_END()
