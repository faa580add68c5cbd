// SPDX-License-Identifier: MIT
// The scheduler views against their definitions, read by the test itself while the test
// workload holds still: Σ RSS = Σ VmRSS of the tree's processes, Σ PSS = Σ Pss of their
// smaps_rollup, the cgroup's anon = memory.stat. The recording runs in a cgroup of its own (so
// that cgroup holds only the recorder and its command) with a 1 GiB limit, and SLURM's
// --mem in the environment: the limit reported follows the precedence flag, SLURM, cgroup. Also
// scenario 1 (a file shared by the workers: Σ RSS / Σ PSS of it against smaps read by the test)
// and 12 (a limit near), each with its control.
#include "cgroup_support.hpp"
#include "loaderlens/report.hpp"
#include "precondition.hpp"
#include "residency_support.hpp"
#include "smaps_oracle.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::cgroups;
using namespace std::chrono_literals;

namespace {

// "Key:   123 kB" from a /proc text, by the test's own reading.
std::int64_t field_kb(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
    return -1;
}

std::vector<pid_t> descendants(pid_t root) {
    std::vector<pid_t> out, todo{root};
    while (!todo.empty()) {
        const pid_t pid = todo.back();
        todo.pop_back();
        std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
        pid_t child = 0;
        while (in >> child) {
            out.push_back(child);
            todo.push_back(child);
        }
    }
    return out;
}

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What the test read of the tree while it held still.
struct Oracle {
    std::int64_t t_unix_ms = 0;
    std::int64_t rss_kb = 0, pss_kb = 0, file_rss_kb = 0, file_pss_kb = 0;
    std::int64_t cgroup_anon_kb = 0, recorder_rss_kb = 0;
};

// The view's value at the tick nearest `t_ms`.
std::int64_t value_near(const SchedulerView& view, std::int64_t t_ms) {
    const SeriesPoint* best = nullptr;
    for (const SeriesPoint& p : view.points)
        if (p.value && (!best || std::llabs(p.t_ms - t_ms) < std::llabs(best->t_ms - t_ms)))
            best = &p;
    BOOST_REQUIRE_MESSAGE(best, view.key << " has no value");
    return *best->value;
}

struct Recorded {
    std::string path;
    Oracle oracle;
};

// Records the workload (`workers` workers mapping `data`, 8 MiB of their own each) in `group`,
// with `environment` ("NAME=VALUE ..." or empty), and reads the oracle in the hold.
Recorded record_in(const TestCgroup& group, const TempDir& dir, const std::string& name,
                   const std::string& data, int workers, const std::string& environment) {
    const std::string out = dir.file(name);
    std::vector<std::string> argv{"/bin/sh",
                                  "-c",
                                  "echo $$ > '" + (group.dir() / "cgroup.procs").string() +
                                      "' && exec env " + environment + " \"$0\" \"$@\"",
                                  cli_path(),
                                  "record",
                                  "-q",
                                  "-o",
                                  out,
                                  "--interval",
                                  "rollup=250ms",
                                  "--"};
    for (const std::string& word : workload(data, workers, 8, 1, 4000))
        argv.push_back(word);
    Child recorder(argv);
    BOOST_REQUIRE_MESSAGE(recorder.wait_for_line("ready 0", 20s), "the workload did not start");
    std::this_thread::sleep_for(1500ms); // several rollup readings of the settled tree
    Oracle o;
    o.t_unix_ms = unix_ms();
    struct stat st {};
    BOOST_REQUIRE(::stat(data.c_str(), &st) == 0);
    for (pid_t pid : descendants(recorder.pid())) {
        const std::string proc = "/proc/" + std::to_string(pid);
        o.rss_kb += field_kb(proc + "/status", "VmRSS");
        o.pss_kb += field_kb(proc + "/smaps_rollup", "Pss");
        if (auto file = smaps_of_file(pid, st.st_ino)) {
            o.file_rss_kb += file->rss_kb;
            o.file_pss_kb += file->pss_kb;
        }
    }
    o.recorder_rss_kb = field_kb("/proc/" + std::to_string(recorder.pid()) + "/status", "VmHWM");
    o.cgroup_anon_kb = group.anon_bytes().value_or(-1024) / 1024;
    const auto status = recorder.wait(30s);
    BOOST_REQUIRE_MESSAGE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0,
                          "record failed");
    return {out, o};
}

// The thrashing tests' memory cgroup, or why there is none (they need root and a hierarchy).
std::optional<Hierarchy> thrash_hierarchy() {
    if (!precondition(::geteuid() == 0, "needs root to make a cgroup", InCi::must_have)) return {};
    std::string why_v2, why_v1;
    auto hierarchy = memory_v2(why_v2);
    if (!hierarchy) hierarchy = memory_v1(why_v1);
    if (!precondition(hierarchy.has_value(), why_v2 + "; " + why_v1, InCi::must_have)) return {};
    // Evicted pages come from cachestat(2) only; mincore (the fallback) sees cached pages alone.
    if (!precondition(residency::kernel_offers_cachestat(),
                      "no cachestat(2) in this kernel (Linux 6.5+): evictions cannot be seen",
                      InCi::may_lack))
        return {};
    return hierarchy;
}

// Runs `argv` inside a new cgroup of `limit_mib` (so the page cache it reads is charged there).
RunResult run_in_cgroup(const Hierarchy& hierarchy, std::int64_t limit_mib,
                        const std::vector<std::string>& argv) {
    TestCgroup group(hierarchy.version, hierarchy.base,
                     "loaderlens-thrash-" + std::to_string(::getpid()));
    BOOST_REQUIRE_MESSAGE(group.problem().empty(), group.problem());
    BOOST_REQUIRE_MESSAGE(group.set_limit(limit_mib << 20), group.problem());
    std::vector<std::string> shell{"/bin/sh", "-c",
                                   "echo $$ > '" + (group.dir() / "cgroup.procs").string() +
                                       "' && exec \"$0\" \"$@\""};
    shell.insert(shell.end(), argv.begin(), argv.end());
    return run(shell, std::chrono::seconds(120));
}

// A 128 MiB dataset of 4 KiB records, and the replay of it the thrashing tests run.
struct ThrashData {
    TempDir dir;
    std::string data = dir.file("big.raw");
    std::int64_t pages = (128ll << 20) / residency::page_size();
    ThrashData() {
        BOOST_REQUIRE(
            run({cli_path(), "mkdata", "raw", data, "--count", "32768", "--record-size", "4KiB"})
                .exit_code == 0);
    }
    ReportData replay_in(const Hierarchy& hierarchy, std::int64_t limit_mib,
                         const std::string& name, std::vector<std::string> extra = {}) {
        const std::string out = dir.file(name);
        std::vector<std::string> argv{cli_path(),   "replay",         "-q",   "-o",        out,
                                      data,         "--record-size",  "4KiB", "--workers", "2",
                                      "--interval", "residency=250ms"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        const RunResult result = run_in_cgroup(hierarchy, limit_mib, argv);
        BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
        Recording recording(out);
        return build_report(recording);
    }
};

const FileResidencySummary* residency_of(const ReportData& report, const std::string& path) {
    for (const FileResidencySummary& r : report.residency)
        if (r.file.path == path) return &r;
    return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(scheduler_views)

BOOST_AUTO_TEST_CASE(views_match_the_kernel_limits_follow_their_precedence, *LOADERLENS_MAY_SKIP) {
    if (!precondition(::geteuid() == 0, "needs root to make a cgroup", InCi::must_have)) return;
    std::string why_v2, why_v1;
    auto hierarchy = memory_v2(why_v2);
    if (!hierarchy) hierarchy = memory_v1(why_v1);
    if (!precondition(hierarchy.has_value(), why_v2 + "; " + why_v1, InCi::must_have)) return;
    TestCgroup group(hierarchy->version, hierarchy->base,
                     "loaderlens-views-" + std::to_string(::getpid()));
    BOOST_REQUIRE_MESSAGE(group.problem().empty(), group.problem());
    constexpr std::int64_t cgroup_limit_kb = 1024 * 1024;
    BOOST_REQUIRE_MESSAGE(group.set_limit(cgroup_limit_kb * 1024), group.problem());

    TempDir dir;
    const std::string data = dir.file("data.bin");
    make_file(data, 32 << 20);
    const Recorded three = record_in(group, dir, "three.db", data, 3, "SLURM_MEM_PER_NODE=2048");
    const Oracle& o = three.oracle;
    Recording recording(three.path);
    const ReportData report = build_report(recording);
    const Diagnosis& d = report.diagnosis;
    const std::int64_t t_ms = o.t_unix_ms - *recording.meta_number("start_unix_ns") / 1'000'000;
    BOOST_TEST_MESSAGE("oracle at " << t_ms << " ms: Σ VmRSS " << o.rss_kb << ", Σ Pss " << o.pss_kb
                                    << ", cgroup anon " << o.cgroup_anon_kb << " KiB; file Rss "
                                    << o.file_rss_kb << ", Pss " << o.file_pss_kb);
    auto near = [&](const char* key) {
        const SchedulerView* view = d.view(key);
        BOOST_REQUIRE(view);
        return value_near(*view, t_ms);
    };
    BOOST_TEST(std::abs(near("slurm_linux") - o.rss_kb) <= o.rss_kb / 100);
    const bool pss_ok = std::abs(near("slurm_usepss") - o.pss_kb) <= o.pss_kb / 100;
    BOOST_TEST(pss_ok, "Σ PSS near " << t_ms << " ms: " << near("slurm_usepss") << " KiB");
    if (!pss_ok) // the whole series, to tell a stale kept reading from a moving tree
        for (const auto& [t, s] : recording.rollup())
            BOOST_TEST_MESSAGE("rollup " << t << " process " << s.process_id << " pss "
                                         << s.pss.value_or(-1) << " age " << s.age_ms
                                         << " computed " << s.pss_computed.value_or(-1));
    if (hierarchy->version == "v1") // total_rss; v2's slurm_cgroup is memory.current
        BOOST_TEST(std::abs(near("slurm_cgroup") - o.cgroup_anon_kb) <=
                   std::max<std::int64_t>(o.cgroup_anon_kb / 100, 512));
    // The limit: SLURM's --mem (2 GiB) before the cgroup's 1 GiB; the flag before both. The
    // cgroup views are held against the cgroup's own, lower, limit.
    BOOST_TEST(d.limit.source == "SLURM_MEM_PER_NODE");
    BOOST_TEST(d.limit.kb.value_or(0) == 2048 * 1024);
    BOOST_TEST(d.view("cgroup_usage")->limit.kb.value_or(0) == cgroup_limit_kb);
    BOOST_TEST(d.view("slurm_linux")->limit.kb.value_or(0) == 2048 * 1024);
    const ReportData flagged = build_report(recording, {.mem_limit_kb = 3 * 1024 * 1024});
    BOOST_TEST(flagged.diagnosis.limit.source == "--mem-limit");
    BOOST_TEST(flagged.diagnosis.limit.kb.value_or(0) == 3 * 1024 * 1024);
    // The recorder's own size is stated, and is what a step's accounting adds.
    BOOST_REQUIRE(d.recorder_peak_rss_kb.has_value());
    BOOST_TEST(*d.recorder_peak_rss_kb >= o.recorder_rss_kb);

    // 1: three workers share the file: Σ RSS / Σ PSS of it as the test read it, within 10%.
    BOOST_REQUIRE(o.file_pss_kb > 0);
    const double ratio = static_cast<double>(o.file_rss_kb) / static_cast<double>(o.file_pss_kb);
    int shared = 0;
    for (const Finding& f : d.findings)
        if (f.kind == "shared_file_cache") {
            ++shared;
            BOOST_TEST(f.file == data);
            BOOST_TEST(std::abs(f.figure - ratio) <= 0.10 * ratio, f.figure << " vs " << ratio);
        }
    BOOST_TEST(shared == 1);

    // 12: a limit 8 MiB above what the test saw (with the recorder) is near; 100 GiB is not.
    const std::int64_t tight = o.rss_kb + o.recorder_rss_kb + 8 * 1024;
    const ReportData near_limit = build_report(recording, {.mem_limit_kb = tight});
    const Finding* limit = nullptr;
    for (const Finding& f : near_limit.diagnosis.findings)
        if (f.kind == "limit_near") limit = &f;
    BOOST_REQUIRE_MESSAGE(limit, "no limit_near with --mem-limit " << tight << " KiB");
    BOOST_TEST_MESSAGE("limit_near: margin " << limit->figure << " KiB (oracle 8192)");
    BOOST_TEST(std::abs(limit->figure - 8 * 1024) <= 2 * 1024);
    const ReportData roomy = build_report(recording, {.mem_limit_kb = 100ll * 1024 * 1024});
    for (const Finding& f : roomy.diagnosis.findings)
        BOOST_TEST(f.kind != "limit_near");

    // Without SLURM's variable the cgroup's limit is the one; one worker shares nothing.
    const Recorded one = record_in(group, dir, "one.db", data, 1, "");
    Recording single(one.path);
    const ReportData alone = build_report(single);
    BOOST_TEST(alone.diagnosis.limit.kb.value_or(0) == cgroup_limit_kb);
    BOOST_TEST(alone.diagnosis.limit.source.starts_with("cgroup " + hierarchy->version));
    for (const Finding& f : alone.diagnosis.findings)
        BOOST_TEST(f.kind != "shared_file_cache");
}

// 10: a 128 MiB dataset read twice inside a cgroup of 80 MiB, from a cold cache (so its pages
// are charged there): the page cache cannot hold it, pages are evicted and read again. Every page
// was read, so each one the test's own mincore(2) finds missing at the end was evicted at least
// once: a floor for the evictions the finding counts (the loader pauses 700 ms after each epoch,
// so residency samples, every 250 ms, see the end state). Control: the same run in 1 GiB.
BOOST_AUTO_TEST_CASE(dataset_larger_than_the_cgroup_thrashes, *LOADERLENS_MAY_SKIP) {
    const auto hierarchy = thrash_hierarchy();
    if (!hierarchy) return;
    ThrashData t;
    const std::vector<std::string> twice{"--epochs",      "2",     "--batch",   "64",
                                         "--epoch-pause", "700ms", "--pattern", "sequential"};
    residency::make_cold(t.data);
    const ReportData tight = t.replay_in(*hierarchy, 80, "tight.db", twice);
    const std::int64_t missing = t.pages - residency::cached_pages(t.data);
    const Finding* thrash = nullptr;
    for (const Finding& f : tight.diagnosis.findings)
        if (f.kind == "cache_thrashing") thrash = &f;
    BOOST_REQUIRE_MESSAGE(thrash, "no cache_thrashing in a cgroup of 80 MiB");
    BOOST_TEST_MESSAGE("evicted " << thrash->figure << " pages; missing at the end " << missing);
    BOOST_TEST(thrash->file == t.data);
    BOOST_TEST(thrash->figure >= 0.9 * static_cast<double>(missing));
    BOOST_TEST(thrash->figure <= 2.0 * static_cast<double>(t.pages)); // read twice at most
    residency::make_cold(t.data);
    const ReportData roomy = t.replay_in(*hierarchy, 1024, "roomy.db", twice);
    for (const Finding& f : roomy.diagnosis.findings)
        BOOST_TEST(f.kind != "cache_thrashing");
}

// Pages evicted before the run are not thrashing: `cat` reads the file in a cgroup of 48 MiB,
// which evicts the first ~80 MiB of it (shadow entries stay, for some); the replay then reads it
// once in 1 GiB, faulting those pages back in and evicting none. The report counts them as evicted
// before the recording (against the test's own cachestat(2) call before the replay: at most that,
// at least half, as the loader re-reads the first pages before the first residency sample) and
// raises no finding.
BOOST_AUTO_TEST_CASE(pages_evicted_before_the_run_are_no_thrashing, *LOADERLENS_MAY_SKIP) {
    const auto hierarchy = thrash_hierarchy();
    if (!hierarchy) return;
    ThrashData t;
    // How many shadow entries the kernel keeps varies (docs/residency.md): the step is repeated
    // until at least 10% of the file was evicted.
    std::optional<std::int64_t> evicted;
    for (int attempt = 0; attempt < 3 && evicted.value_or(0) < t.pages / 10; ++attempt) {
        residency::make_cold(t.data);
        const RunResult cat = run_in_cgroup(*hierarchy, 48, {"cat", t.data});
        BOOST_REQUIRE_MESSAGE(cat.exit_code == 0, cat.err);
        evicted = residency::evicted_pages(t.data);
        BOOST_TEST_REQUIRE(evicted.has_value());
        BOOST_TEST_MESSAGE("evicted before the replay: " << *evicted << " of " << t.pages);
    }
    BOOST_TEST_REQUIRE(*evicted >= t.pages / 10);
    // 1 MiB batches in shuffled order, one per 10 ms: a few MiB are read before the first
    // residency sample, spread over the file, so few of them are pages evicted before.
    const ReportData report = t.replay_in(
        *hierarchy, 1024, "after.db",
        {"--epochs", "1", "--batch", "256", "--step-time", "10ms", "--pattern", "shuffle"});
    const FileResidencySummary* r = residency_of(report, t.data);
    BOOST_TEST_REQUIRE(r);
    BOOST_TEST_REQUIRE(r->evicted_at_start.has_value());
    BOOST_TEST_REQUIRE(r->evicted_during.has_value());
    BOOST_TEST_MESSAGE("evicted at start " << *r->evicted_at_start << ", during "
                                           << *r->evicted_during);
    BOOST_TEST(*r->evicted_at_start >= *evicted / 2);
    BOOST_TEST(*r->evicted_at_start <= *evicted);
    BOOST_TEST(*r->evicted_during < t.pages / 100);
    for (const Finding& f : report.diagnosis.findings)
        BOOST_TEST(f.kind != "cache_thrashing", f.title);
}

BOOST_AUTO_TEST_SUITE_END()
