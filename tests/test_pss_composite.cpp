// SPDX-License-Identifier: MIT
// Composite PSS (RollupSampler given the followed files' share from the residency tier): the
// rest of a process's last smaps_rollup reading plus its data-file share computed from pagemap
// now, against the kernel's own smaps_rollup read here by a parser of this test's own. Children
// map a 64 MiB file whole, fault in more of it between two samples, then grow their anonymous
// memory, which any process's composite does not explain: read afresh.
#include "loaderlens/followed_share.hpp"
#include "loaderlens/rollup_sampler.hpp"
#include "residency_children.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <sys/mman.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;

namespace {

struct Rollup {
    std::int64_t rss_kb = -1, pss_kb = -1, uss_kb = 0; // USS: Private_Clean + Private_Dirty
};

// The oracle: /proc/PID/smaps_rollup's Rss, Pss and Private_* lines.
Rollup kernel_rollup(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
    Rollup r;
    std::string key;
    std::int64_t value = 0;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        if (!(fields >> key >> value)) continue;
        if (key == "Rss:") r.rss_kb = value;
        if (key == "Pss:") r.pss_kb = value;
        if (key == "Private_Clean:" || key == "Private_Dirty:") r.uss_kb += value;
    }
    BOOST_REQUIRE_MESSAGE(r.pss_kb >= 0, "no Pss in /proc/" << pid << "/smaps_rollup");
    return r;
}

// A child that maps the whole file and obeys "touch FIRST COUNT" (reads one byte of each of
// those pages) and "anon KIB" (allocates and writes that much private memory), answering "done".
std::unique_ptr<Forked> start_toucher(const std::string& path, std::int64_t pages) {
    auto child = std::make_unique<Forked>([=](Forked& self) {
        const int fd = ::open(path.c_str(), O_RDONLY);
        const auto length = static_cast<std::size_t>(pages * page_size());
        auto* base =
            static_cast<volatile char*>(::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0));
        ::madvise(const_cast<char*>(base), length, MADV_RANDOM);
        self.send("ready");
        for (;;) {
            std::istringstream command(self.receive(120s));
            std::string verb;
            std::int64_t a = 0, b = 0;
            command >> verb >> a >> b;
            if (verb == "touch") {
                char sum = 0;
                for (std::int64_t p = a; p < a + b; ++p)
                    sum = static_cast<char>(sum + base[p * page_size()]);
                (void)sum;
            } else if (verb == "anon") {
                const auto bytes = static_cast<std::size_t>(a) << 10;
                auto* anon = static_cast<char*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                                                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
                std::memset(anon, 1, bytes);
            } else {
                return;
            }
            self.send("done");
        }
    });
    BOOST_REQUIRE_EQUAL(child->receive(), "ready");
    return child;
}

void tell(const std::vector<std::unique_ptr<Forked>>& children, std::size_t i,
          const std::string& command) {
    children[i]->send(command);
    BOOST_REQUIRE_EQUAL(children[i]->receive(), "done");
}

// Within 1%, or 64 KiB: the figures are read a few ms apart and smaps truncates to whole KiB.
void check_close(std::int64_t ours, std::int64_t kernel, const char* what) {
    const double tolerance = std::max(0.01 * static_cast<double>(kernel), 64.0);
    BOOST_TEST(std::abs(static_cast<double>(ours - kernel)) <= tolerance,
               what << ": ours " << ours << " KiB, smaps_rollup " << kernel << " KiB");
}

} // namespace

BOOST_AUTO_TEST_SUITE(pss_composite)

BOOST_AUTO_TEST_CASE(composite_pss_follows_the_data_files_and_the_bound_brings_the_rest) {
    constexpr std::int64_t max_age_ms = 3000;
    for (const Methods& method : all_methods()) {
        if (method.cache != CacheMethod::mincore) continue; // the page cache plays no part here
        BOOST_TEST_CONTEXT(method.name()) {
            DataFile data;
            std::vector<std::unique_ptr<Forked>> children;
            std::vector<ProcessInfo> live;
            for (std::int64_t i = 0; i < 3; ++i) {
                children.push_back(start_toucher(data.path, file_pages));
                live.push_back(process(i + 1, children.back()->pid()));
                tell(children, i, "touch " + std::to_string(i * 2048) + " 4096"); // overlapping
            }
            Follower residency(method.options());
            // No longer kept when nothing outside moved (max_age_ms is then the bound).
            RollupSampler rollup(max_age_ms, max_age_ms);
            Problems problems;
            auto sample = [&] {
                residency.sample(live);
                const FollowedShares shares =
                    followed_shares(residency.last.mapped, page_size() / 1024);
                std::vector<RollupSample> rows;
                rollup.sample(live, rows, problems, &shares);
                BOOST_REQUIRE_EQUAL(rows.size(), live.size());
                return rows;
            };
            const auto read_at = std::chrono::steady_clock::now();
            for (const RollupSample& row : sample()) {
                BOOST_TEST(!row.pss_computed.has_value()); // first: the kernel's reading
                check_close(row.pss.value_or(-1),
                            kernel_rollup(children[row.process_id - 1]->pid()).pss_kb,
                            "first reading");
            }

            // Each child faults in 16 MiB more, partly shared: the data files' share moves.
            std::vector<std::int64_t> before;
            for (std::size_t i = 0; i < children.size(); ++i) {
                before.push_back(kernel_rollup(children[i]->pid()).pss_kb);
                tell(children, i, "touch " + std::to_string(8192 + i * 1024) + " 4096");
            }
            const auto rows = sample();
            BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() - read_at <
                                      std::chrono::milliseconds(max_age_ms),
                                  "the children took longer than the bound to fault in 48 MiB");
            for (const RollupSample& row : rows) {
                BOOST_TEST_CONTEXT("child " << row.process_id) {
                    const pid_t pid = children[row.process_id - 1]->pid();
                    const Rollup kernel = kernel_rollup(pid);
                    // The test can fail: a kept reading would be off by far more than 1%.
                    BOOST_TEST(kernel.pss_kb > before[row.process_id - 1] + 4096);
                    BOOST_TEST(row.pss_computed.has_value());
                    BOOST_TEST(row.age_ms < max_age_ms);
                    BOOST_TEST(!row.private_clean.has_value()); // the split is not computed
                    check_close(row.pss.value_or(-1), kernel.pss_kb, "composite PSS");
                    check_close(row.rss.value_or(-1), kernel.rss_kb, "composite RSS");
                }
            }

            // 8 MiB of anonymous memory in child 1, then 512 KiB in child 2: new private pages,
            // RssAnon up with a fault per page at most. The process is read afresh (a composite
            // would carry its PSS but not its USS), and seen at once (before issue 26 a rest that
            // moved by less than 1 MiB and 5% was not seen until the bound: 256-768 KiB missed).
            for (const auto& [child, kib] : {std::pair{0, 8192}, std::pair{1, 512}}) {
                tell(children, static_cast<std::size_t>(child), "anon " + std::to_string(kib));
                const auto moved = sample();
                const auto& row = moved[static_cast<std::size_t>(child)];
                check_close(row.pss.value_or(-1),
                            kernel_rollup(children[static_cast<std::size_t>(child)]->pid()).pss_kb,
                            "after anonymous memory");
                BOOST_TEST(!row.pss_computed, "after " << kib << " KiB of anonymous memory: "
                                                       << "a composite row, USS not read");
                check_close(row.uss().value_or(-1),
                            kernel_rollup(children[static_cast<std::size_t>(child)]->pid()).uss_kb,
                            "USS after anonymous memory");
            }
            // Nothing moves now: the readings are kept, then read again once older than the
            // bound.
            const auto kept_from = std::chrono::steady_clock::now();
            bool kept = false;
            for (int look = 0; look < 3 && !kept; ++look) {
                sample();
                kept = rollup.read_last() == 0;
            }
            BOOST_TEST(kept);
            std::this_thread::sleep_until(kept_from + std::chrono::milliseconds(max_age_ms + 50));
            for (const RollupSample& row : sample()) {
                BOOST_TEST(row.age_ms == 0);
                check_close(row.pss.value_or(-1),
                            kernel_rollup(children[row.process_id - 1]->pid()).pss_kb,
                            "read again after the bound");
            }
            BOOST_TEST(problems.empty());
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
