// Samplers against what the kernel must report for a tree of known shape: W workers that each map
// a FILE-byte file read-only and touch every page, and write ANON bytes of private memory; main
// maps nothing. Tolerance: 5% of the expected figure. What the tolerance absorbs is each
// process's own baseline (binary, libc share, stack: measured under 0.3 MiB per worker here).
#include "loaderlens/samplers.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

constexpr int workers = 4;
constexpr std::int64_t file_kb = 32 * mib_kb, anon_kb = 16 * mib_kb;

bool within(double measured, double expected, double tolerance = 0.05) {
    return std::abs(measured - expected) <= tolerance * expected;
}

struct KnownTree {
    TempDir dir;
    std::string data = dir.file("data.bin");
    RecordingClock clock;
    std::unique_ptr<Child> child;
    std::unique_ptr<TreeTracker> tracker;
    std::vector<ProcessInfo> live;

    KnownTree() {
        make_file(data, static_cast<std::size_t>(file_kb) * 1024);
        child = std::make_unique<Child>(workload(data, workers, anon_kb / mib_kb));
        BOOST_REQUIRE(child->wait_for_line("ready", std::chrono::seconds(20)));
        tracker = std::make_unique<TreeTracker>(
            TrackerOptions{.scan_root = child->pid(), .main_pid = child->pid()}, clock);
        live = track_until(*tracker, workers + 1);
        BOOST_REQUIRE_EQUAL(live.size(), std::size_t{workers + 1});
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(samplers_against_the_kernel)

BOOST_AUTO_TEST_CASE(fast_tier_rss_and_split) {
    KnownTree tree;
    FastSampler fast;
    std::vector<FastSample> samples;
    Problems problems;
    fast.sample(tree.live, 0, samples, problems);
    BOOST_TEST(problems.empty());
    BOOST_REQUIRE_EQUAL(samples.size(), tree.live.size());
    std::int64_t total_rss = 0;
    for (const auto& s : samples) {
        total_rss += *s.rss;
        BOOST_TEST(*s.rss == *s.rss_anon + *s.rss_file + *s.rss_shmem);
        const ProcessInfo& p = tree.live[static_cast<std::size_t>(&s - samples.data())];
        if (p.role != Role::worker) continue;
        BOOST_TEST(*s.rss >= file_kb + anon_kb);
        BOOST_TEST(*s.rss_file >= file_kb);
        BOOST_TEST(*s.rss_anon >= anon_kb);
    }
    // Σ RSS counts the shared file once per worker.
    BOOST_TEST(within(total_rss, workers * (file_kb + anon_kb)), "Σ RSS " << total_rss);

    // A second tick with nothing moving reuses the split (statm only) and gives the same figures.
    std::vector<FastSample> again;
    fast.sample(tree.live, 10, again, problems);
    BOOST_REQUIRE_EQUAL(again.size(), samples.size());
    BOOST_TEST(*again[1].rss_file == *samples[1].rss_file);
}

BOOST_AUTO_TEST_CASE(rollup_tier_pss_uss) {
    KnownTree tree;
    RollupSampler rollup;
    std::vector<RollupSample> samples;
    Problems problems;
    rollup.sample(tree.live, samples, problems);
    BOOST_TEST(problems.empty());
    BOOST_REQUIRE_EQUAL(samples.size(), tree.live.size());
    std::int64_t total_pss = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        const RollupSample& s = samples[i];
        total_pss += *s.pss;
        if (tree.live[i].role != Role::worker) continue;
        // Each file page is mapped by all W workers: each carries 1/W of it; the anon is its own.
        const double expected = static_cast<double>(file_kb) / workers + anon_kb;
        BOOST_TEST(within(*s.pss, expected), "worker PSS " << *s.pss << " expected " << expected);
        BOOST_TEST(*s.uss() >= anon_kb);
        BOOST_TEST(within(*s.pss_file, static_cast<double>(file_kb) / workers));
        BOOST_TEST(*s.pss_anon >= anon_kb);
    }
    // Σ PSS counts the file once: the tree's physical share.
    BOOST_TEST(within(total_pss, file_kb + workers * anon_kb), "Σ PSS " << total_pss);
}

BOOST_AUTO_TEST_CASE(maps_tier_per_file) {
    KnownTree tree;
    MapsSampler maps;
    std::vector<MapsSample> samples;
    Problems problems;
    maps.sample(tree.live, samples, problems);
    BOOST_TEST(problems.empty());
    std::int64_t file_pss = 0;
    int workers_mapping = 0;
    for (const auto& sample : samples) {
        for (const auto& o : sample.objects) {
            if (o.path != tree.data) continue;
            ++workers_mapping;
            file_pss += o.pss_kb;
            BOOST_TEST(o.kind == MappingKind::file);
            BOOST_TEST(o.rss_kb == file_kb);
            // Mapped by W processes. Shared, clean or dirty: the file was just written, and its
            // page-cache pages count as dirty until writeback, however they are mapped.
            BOOST_TEST(o.shared_clean_kb + o.shared_dirty_kb == file_kb);
            BOOST_TEST(o.private_clean_kb + o.private_dirty_kb == 0);
        }
    }
    BOOST_TEST(workers_mapping == workers);
    BOOST_TEST(within(file_pss, file_kb), "Σ PSS of the file " << file_pss);
}

BOOST_AUTO_TEST_CASE(rollup_follows_a_process_through_exec) {
    // The kept-open smaps_rollup pins the address space it was opened on; after an exec the
    // sampler must open it again rather than take the process for gone.
    pid_t child = fork();
    if (child == 0) {
        usleep(300'000);
        execl("/bin/sleep", "sleep", "5", nullptr);
        _exit(127);
    }
    RecordingClock clock;
    TreeTracker tracker(TrackerOptions{.scan_root = child, .main_pid = child}, clock);
    auto live = track_until(tracker, 1);
    BOOST_REQUIRE_EQUAL(live.size(), 1u);
    RollupSampler rollup;
    std::vector<RollupSample> before, after;
    Problems problems;
    rollup.sample(live, before, problems);
    usleep(700'000); // now it runs sleep
    rollup.sample(live, after, problems);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    BOOST_TEST(before.size() == 1u);
    BOOST_TEST(after.size() == 1u);
    BOOST_TEST(problems.empty());
}

BOOST_AUTO_TEST_CASE(unreadable_rollup_is_unavailable_not_zero) {
    // As an unprivileged user, another user's smaps_rollup cannot be read (PTRACE_MODE_READ).
    if (geteuid() != 0) {
        BOOST_TEST_MESSAGE("skipped: needs root to switch to an unprivileged user");
        return;
    }
    RecordingClock clock;
    TreeTracker tracker(TrackerOptions{.scan_root = 1, .main_pid = 1}, clock);
    tracker.scan();
    auto live = tracker.live();
    BOOST_REQUIRE(!live.empty());
    live.resize(1); // pid 1, owned by root
    pid_t child = fork();
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
        RollupSampler rollup;
        std::vector<RollupSample> samples;
        Problems problems;
        rollup.sample(live, samples, problems);
        // No sample (never a row of zeros) and a reason that names the permission.
        bool ok = samples.empty() && problems.size() == 1 &&
                  problems[0].reason.find("permission denied") != std::string::npos;
        _exit(ok ? 0 : 11);
    }
    int status = 0;
    waitpid(child, &status, 0);
    BOOST_TEST(WIFEXITED(status));
    BOOST_TEST(WEXITSTATUS(status) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
