// SPDX-License-Identifier: MIT
// ResidencySampler over forked children that map a file and touch known pages: a process's present
// pages of the file, per bucket of file offsets, with each way of reading the kernel forced: both
// page-cache methods (cachestat, mincore) and both pagemap readers (PAGEMAP_SCAN, 8-byte entries).
//
// Known pages: after DONTNEED, a fault through a MADV_RANDOM mapping reads and maps exactly the
// faulting page (order-0 folio, no readahead), and fault-around only maps pages already cached, so
// a child that touches N pages of a cold file has exactly N present. Children that must not see
// each other's pages touch pages in different 64 KiB (fault-around) windows. On a warm file
// (large folios) a fault may map more than the page: the bound is then the union of the touched
// pages' 64 KiB and 2 MiB windows.
#include "residency_children.hpp"

#include <boost/test/unit_test.hpp>
#include <sys/mman.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_SUITE(residency)

BOOST_AUTO_TEST_CASE(cold_file_random_advice_present_is_the_touched_pages) {
    DataFile data;
    const std::uint64_t bytes = file_pages * page_size();
    std::set<std::int64_t> touched{0, 1, 2, 63, 64, 100, 1000, 4096, 8191, 12000, 16383};
    for (std::int64_t p = 2000; p < 2600; p += 2) // 300 runs: more than one PAGEMAP_SCAN vector
        touched.insert(p);
    auto child = start_mapper({{.path = data.path, .length = bytes}}, touches_of(0, touched));
    const std::vector<ProcessInfo> live{process(7, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        BOOST_TEST(file->layout.bucket_pages == 64);
        BOOST_TEST(!file->requested);
        BOOST_TEST(f.problems.empty());
        check_present(f, *file, 7, touched, file_pages);
        const CacheResidency* cache = f.cache(file->id);
        BOOST_REQUIRE(cache);
        BOOST_TEST(cache->totals.cached == static_cast<std::int64_t>(touched.size()));
        BOOST_TEST(cache->buckets == buckets_of(file->layout, touched), tt::per_element());
    });
}

BOOST_AUTO_TEST_CASE(warm_file_present_within_fault_around_and_folio_windows) {
    DataFile data;
    // Cold, then read sequentially: readahead's large folios. DAMON may page some out again (it
    // pages out idle physical memory every 5 s): the bound below holds all the same (a fault reads
    // a missing page into a folio inside its 2 MiB window), only less tightly.
    std::int64_t cached = 0;
    for (int attempt = 0; attempt < 3 && cached != file_pages; ++attempt) {
        read_all(data.path);
        cached = cached_pages(data.path);
    }
    BOOST_TEST_MESSAGE("warm file: " << cached << " of " << file_pages << " pages cached");
    const std::set<std::int64_t> touched{0, 17, 1000, 4095, 4096, 8200, 12345, 16383};
    std::vector<std::uint64_t> addresses;
    auto child = start_mapper({{.path = data.path,
                                .length = static_cast<std::uint64_t>(file_pages * page_size()),
                                .advice = MADV_NORMAL,
                                .align_2mib = true}},
                              touches_of(0, touched), &addresses);
    BOOST_REQUIRE_EQUAL(addresses.size(), 1u);
    BOOST_REQUIRE_EQUAL(addresses[0] % two_mib, 0u); // so file and VA windows coincide
    // Upper bound: each touched page's 64 KiB fault-around window and 2 MiB folio window (every
    // page of the file is cached, so nothing is clipped).
    const std::int64_t around = 65536 / page_size(), folio = two_mib / page_size();
    std::set<std::int64_t> bound;
    for (std::int64_t p : touched)
        for (std::int64_t window : {around, folio})
            for (std::int64_t q = p / window * window; q < (p / window + 1) * window; ++q)
                if (q < file_pages) bound.insert(q);

    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        const auto rows = f.rows(file->id, 1);
        BOOST_REQUIRE_EQUAL(rows.size(), 1u);
        const MappedResidency& row = rows.front();
        BOOST_TEST_MESSAGE("warm file: " << touched.size() << " pages touched, "
                                         << row.present_pages << " present, bound "
                                         << bound.size());
        BOOST_TEST(row.present_pages >= static_cast<std::int64_t>(touched.size()));
        BOOST_TEST(row.present_pages <= static_cast<std::int64_t>(bound.size()));
        BOOST_TEST(sum(row.buckets) == row.present_pages);
        BOOST_TEST(row.mapped_pages == file_pages);
        const BucketCounts least = buckets_of(file->layout, touched),
                           most = buckets_of(file->layout, bound);
        for (int b = 0; b < file->layout.count; ++b) {
            const auto i = static_cast<std::size_t>(b);
            BOOST_TEST_CONTEXT("bucket " << b) {
                BOOST_TEST(row.buckets[i] >= least[i]);
                BOOST_TEST(row.buckets[i] <= most[i]);
            }
        }
    });
}

BOOST_AUTO_TEST_CASE(two_children_each_see_their_own_pages) {
    DataFile data;
    const std::uint64_t bytes = file_pages * page_size();
    // Different 64 KiB windows (16 pages): neither child's fault-around maps the other's pages.
    std::set<std::int64_t> first, second;
    for (std::int64_t i = 0; i < 20; ++i) {
        first.insert(i * 800 + 3);
        second.insert(i * 800 + 400);
    }
    auto a = start_mapper({{.path = data.path, .length = bytes}}, touches_of(0, first));
    auto b = start_mapper({{.path = data.path, .length = bytes}}, touches_of(0, second));
    const std::vector<ProcessInfo> live{process(1, a->pid()), process(2, b->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        BOOST_TEST_CONTEXT("first child") {
            check_present(f, *file, 1, first, file_pages);
        }
        BOOST_TEST_CONTEXT("second child") {
            check_present(f, *file, 2, second, file_pages);
        }
        BOOST_REQUIRE(f.cache(file->id));
        BOOST_TEST(f.cache(file->id)->totals.cached == 40);
    });
}

BOOST_AUTO_TEST_CASE(a_file_mapped_twice_counts_each_page_once) {
    DataFile data;
    const std::uint64_t half = file_pages / 2 * page_size(), quarter = half / 2;
    const std::int64_t second_first_page = file_pages / 4; // second mapping: pages [4096, 12288)
    // Page 5000 is touched through both mappings; the others through one.
    std::vector<Touch> touches{{0, 10}, {0, 5000}, {0, 6000}};
    for (std::int64_t p : {5000, 6100, 10000})
        touches.push_back({1, p - second_first_page});
    auto child = start_mapper({{.path = data.path, .length = half},
                               {.path = data.path, .offset = quarter, .length = half}},
                              touches);
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        check_present(f, *file, 1, {10, 5000, 6000, 6100, 10000}, 3 * file_pages / 4);
    });
}

BOOST_AUTO_TEST_CASE(a_private_copy_of_a_page_is_not_a_file_page) {
    DataFile data;
    // Page 2 is read, then written through the private mapping: the process now maps an anonymous
    // copy of it, which is not the file's page.
    auto child = start_mapper({{.path = data.path,
                                .length = static_cast<std::uint64_t>(file_pages * page_size()),
                                .prot = PROT_READ | PROT_WRITE,
                                .flags = MAP_PRIVATE}},
                              {{0, 1}, {0, 2}, {0, 3}, {0, 2, true}});
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        check_present(f, *file, 1, {1, 3}, file_pages);
    });
}

BOOST_AUTO_TEST_CASE(a_mapping_at_a_file_offset_counts_in_the_file_buckets) {
    DataFile data;
    const std::int64_t at = 5120, tail = 15360; // 20 MiB in; the last 4 MiB
    const std::uint64_t eight_mib = 2048 * page_size();
    // The second mapping is 8 MiB long but only 4 MiB of the file is there: mapped is clipped.
    std::vector<Touch> touches = touches_of(0, {5120, 5183, 5184, 6120, 7167}, at);
    touches.push_back({1, 16383 - tail});
    auto child = start_mapper({{.path = data.path,
                                .offset = static_cast<std::uint64_t>(at * page_size()),
                                .length = eight_mib},
                               {.path = data.path,
                                .offset = static_cast<std::uint64_t>(tail * page_size()),
                                .length = eight_mib}},
                              touches);
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        // Buckets of 64 pages: 80, 80, 81, 95, 111 and 255.
        check_present(f, *file, 1, {5120, 5183, 5184, 6120, 7167, 16383}, 2048 + 1024);
    });
}

BOOST_AUTO_TEST_CASE(after_munmap_one_zero_row_then_none) {
    DataFile data;
    for (const Methods& m : all_methods()) {
        BOOST_TEST_CONTEXT(m.name()) {
            auto child =
                start_mapper({{.path = data.path,
                               .length = static_cast<std::uint64_t>(file_pages * page_size())}},
                             touches_of(0, {5, 500, 5000}));
            Follower f(m.options());
            const std::vector<ProcessInfo> live{process(3, child->pid())};
            f.sample(live);
            const ResidencyFile* file = f.file(data.path);
            BOOST_REQUIRE(file);
            check_present(f, *file, 3, {5, 500, 5000}, file_pages);

            child->send("unmap 0");
            BOOST_REQUIRE_EQUAL(child->receive(), "done");
            f.sample(live);
            const auto rows = f.rows(file->id, 3);
            BOOST_REQUIRE_EQUAL(rows.size(), 1u);
            BOOST_TEST(rows[0].present_pages == 0);
            BOOST_TEST(rows[0].mapped_pages == 0);
            BOOST_TEST(rows[0].buckets ==
                           BucketCounts(static_cast<std::size_t>(file->layout.count), 0),
                       tt::per_element());
            BOOST_TEST(f.cache(file->id) != nullptr); // the page cache is still followed

            f.sample(live);
            BOOST_TEST(f.rows(file->id, 3).size() == 0u);
            BOOST_TEST(f.problems.empty());
            BOOST_TEST(f.sampler.pagemap_method() == expected_pagemap_method(m.pagemap_scan));
        }
    }
}

BOOST_AUTO_TEST_CASE(which_files_are_followed) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), small = dir.file("small.bin"),
                      code = dir.file("code.bin"), asked = dir.file("asked.bin"),
                      missing = dir.file("missing.bin");
    make_file(data, 4 << 20);
    make_file(small, 512 << 10); // under the 1 MiB minimum
    make_file(code, 4 << 20);
    make_file(asked, 2 << 20);
    make_cold(asked); // and stays so: nothing reads it
    auto child = start_mapper(
        {{.path = data, .length = 4 << 20},
         {.path = small, .length = 512 << 10},
         {.path = code, .length = 4 << 20, .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE}},
        {{0, 1}, {1, 1}, {2, 1}});
    const std::vector<ProcessInfo> live{process(1, child->pid())};
    const auto check = [&](Follower& f) {
        BOOST_TEST(f.problems.empty());
        BOOST_TEST(f.file(small) == nullptr);
        BOOST_TEST(f.file(code) == nullptr);
        const ResidencyFile* followed = f.file(data);
        BOOST_REQUIRE(followed);
        BOOST_TEST(!followed->requested);
        BOOST_TEST(f.rows(followed->id, 1).size() == 1u);
        const ResidencyFile* requested = f.file(asked);
        BOOST_REQUIRE(requested);
        BOOST_TEST(requested->requested);
        BOOST_TEST(f.rows(requested->id, 1).empty());
        BOOST_REQUIRE(f.cache(requested->id));
        BOOST_TEST(f.cache(requested->id)->totals.cached == 0);
        BOOST_TEST(f.cache(requested->id)->buckets.size() ==
                   static_cast<std::size_t>(requested->layout.count));
        const ResidencyFile* gone = nullptr;
        for (const auto& [inode, file] : f.files)
            if (file.path == missing) gone = &file;
        BOOST_REQUIRE(gone);
        BOOST_TEST(std::string(to_string(gone->method)) == "unavailable");
        BOOST_TEST(gone->unavailable_reason.starts_with("cannot open " + missing),
                   "reason: " << gone->unavailable_reason);
    };
    // (for_each_method checks the method of every file read: the requested one included.)
    for_each_method(live, check, ResidencyOptions{.files = {asked, missing}});
}

BOOST_AUTO_TEST_SUITE_END()
