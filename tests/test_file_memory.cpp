// SPDX-License-Identifier: MIT
// A process's memory of one data file computed by the residency tier from pagemap (RSS = its
// present file pages; PSS = each page divided by the tree's processes that have it), against the
// kernel's own per-mapping figures in /proc/PID/smaps of the same processes, read here by a parser
// of this test's own. Children map the file whole and in parts, shared and private, with random
// and normal advice, then hold still (quiescence) while both are read.
#include "residency_children.hpp"
#include "smaps_oracle.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <sys/mman.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;
namespace tt = boost::test_tools;

namespace {

SmapsOfFile smaps_of(pid_t pid, std::uint64_t inode) {
    const auto figures = smaps_of_file(pid, inode);
    BOOST_REQUIRE_MESSAGE(figures, "cannot read smaps of " << pid);
    return *figures;
}

std::uint64_t inode_of(const std::string& path) {
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_ino;
}

std::set<std::int64_t> every(std::int64_t step, std::int64_t first, std::int64_t last) {
    std::set<std::int64_t> pages;
    for (std::int64_t p = first; p < last; p += step)
        pages.insert(p);
    return pages;
}

// Within 1%, or 8 KiB for small figures (smaps truncates each mapping's PSS to whole KiB).
void check_close(std::int64_t computed, std::int64_t kernel, const char* what) {
    const double tolerance = std::max(0.01 * static_cast<double>(kernel), 8.0);
    BOOST_TEST(std::abs(static_cast<double>(computed - kernel)) <= tolerance,
               what << ": computed " << computed << " KiB, smaps " << kernel << " KiB");
}

} // namespace

BOOST_AUTO_TEST_SUITE(file_memory)

BOOST_AUTO_TEST_CASE(computed_rss_and_pss_equal_smaps_at_quiescence) {
    DataFile data;
    const std::uint64_t page = static_cast<std::uint64_t>(page_size());
    const std::uint64_t bytes = file_pages * page, sixteenth = bytes / 4; // 16 MiB parts
    // Normal advice first, on the cold file: readahead brings in large folios.
    auto whole_normal = start_mapper({{.path = data.path, .length = bytes, .advice = MADV_NORMAL}},
                                     touches_of(0, every(1, 0, file_pages)));
    auto whole_random = start_mapper({{.path = data.path, .length = bytes}},
                                     touches_of(0, every(1, 0, file_pages)));
    std::vector<Touch> part_touches = touches_of(0, every(4, 0, file_pages / 4));
    for (const Touch& t : touches_of(1, every(1, 0, file_pages / 4)))
        part_touches.push_back(t);
    auto parts = start_mapper(
        {{.path = data.path, .length = sixteenth},
         {.path = data.path, .offset = 2 * sixteenth, .length = sixteenth, .advice = MADV_NORMAL}},
        part_touches);
    auto private_half = start_mapper({{.path = data.path, .length = bytes, .flags = MAP_PRIVATE}},
                                     touches_of(0, every(1, 0, file_pages / 2)));
    const std::vector<pid_t> pids{whole_normal->pid(), whole_random->pid(), parts->pid(),
                                  private_half->pid()};
    std::vector<ProcessInfo> live;
    for (std::size_t i = 0; i < pids.size(); ++i)
        live.push_back(process(static_cast<std::int64_t>(i + 1), pids[i]));
    const std::uint64_t inode = inode_of(data.path);

    for_each_method(live, [&](Follower& f) {
        const ResidencyFile* file = f.file(data.path);
        BOOST_REQUIRE(file);
        std::int64_t sum_pss = 0;
        for (std::size_t i = 0; i < pids.size(); ++i) {
            BOOST_TEST_CONTEXT("child " << i + 1) {
                const SmapsOfFile kernel = smaps_of(pids[i], inode);
                const auto rows = f.rows(file->id, static_cast<std::int64_t>(i + 1));
                BOOST_REQUIRE_EQUAL(rows.size(), 1u);
                const MappedResidency& row = rows.front();
                BOOST_REQUIRE(row.pss_kb.has_value());
                check_close(row.present_pages * page_size() / 1024, kernel.rss_kb, "RSS");
                check_close(*row.pss_kb, kernel.pss_kb, "PSS");
                BOOST_TEST(kernel.mappings == (i == 2 ? 2 : 1));
                // The look for outside sharers was made, and found none: only the test's own
                // children map this file.
                BOOST_TEST(row.outside_sharers.value_or(-1) == 0);
                sum_pss += *row.pss_kb;
            }
        }
        // The pages the children share are divided, not counted four times: Σ PSS is the
        // pages present in at least one child (the whole file, touched by the first two).
        check_close(sum_pss, file_pages * page_size() / 1024, "sum of PSS");
    });
}

BOOST_AUTO_TEST_CASE(an_outside_sharer_is_counted_and_its_share_not_divided) {
    DataFile data;
    const std::uint64_t bytes = file_pages * page_size();
    const auto all = touches_of(0, every(1, 0, file_pages));
    auto first = start_mapper({{.path = data.path, .length = bytes}}, all);
    auto second = start_mapper({{.path = data.path, .length = bytes}}, all);
    auto outside = start_mapper({{.path = data.path, .length = bytes}}, all); // not in `live`
    const std::vector<ProcessInfo> live{process(1, first->pid()), process(2, second->pid())};
    const std::uint64_t inode = inode_of(data.path);

    Follower f;
    f.sample(live);
    const ResidencyFile* file = f.file(data.path);
    BOOST_REQUIRE(file);
    for (std::int64_t id : {1, 2}) {
        BOOST_TEST_CONTEXT("child " << id) {
            const auto rows = f.rows(file->id, id);
            BOOST_REQUIRE_EQUAL(rows.size(), 1u);
            BOOST_TEST(rows.front().outside_sharers.value_or(-1) == 1);
            // Divided by 2 where the kernel divides by 3: half the file against a third.
            const SmapsOfFile kernel = smaps_of(id == 1 ? first->pid() : second->pid(), inode);
            BOOST_REQUIRE(rows.front().pss_kb.has_value());
            check_close(*rows.front().pss_kb, file_pages * page_size() / 1024 / 2, "computed");
            check_close(kernel.pss_kb, file_pages * page_size() / 1024 / 3, "smaps");
        }
    }

    // It goes: the next look (every outside_look_ms) finds no one.
    outside.reset();
    ResidencyOptions often;
    often.outside_look_ms = 0;
    Follower g(often);
    g.sample(live);
    const ResidencyFile* again = g.file(data.path);
    BOOST_REQUIRE(again);
    for (const MappedResidency& row : g.last.mapped)
        BOOST_TEST(row.outside_sharers.value_or(-1) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
