// SPDX-License-Identifier: MIT
// The findings of ../shared/notes/scenarios.md, each made by a real replay of the reference
// loader and checked against a figure the test knows without the code under test: what the
// loader was told to allocate (a leak per epoch, a buffer before fork, a heap workers copy, the
// batches in flight), the page cache read by the test's own mincore(2), the kernel's smaps rows.
// Each has a control: a run without the cause, where that finding must not appear.
#include "finding_support.hpp"
#include "fuzz_sql.hpp"
#include "loaderlens/report.hpp"
#include "replay_support.hpp"
#include "residency_support.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// Exactly one finding of `kind`, whose key figure is within `tolerance` of `expected`.
const Finding& require_one(const ReportData& report, const std::string& kind, double expected,
                           double tolerance = 0.10) {
    const auto found = of_kind(report, kind);
    BOOST_REQUIRE_MESSAGE(found.size() == 1,
                          "expected one " << kind << ", found: " << kinds(report));
    BOOST_TEST_MESSAGE(kind << ": " << found[0]->figure_name << " " << found[0]->figure
                            << " (expected " << expected << ")");
    BOOST_TEST(std::abs(found[0]->figure - expected) <= tolerance * expected,
               kind << " " << found[0]->figure << " vs " << expected);
    return *found[0];
}

void require_none(const ReportData& report, const std::string& kind) {
    BOOST_TEST(of_kind(report, kind).empty(), "control has " << kind << ": " << kinds(report));
}

// (The consumers check ran when `replay` or `record` wrote it: tests/made_recordings.hpp.)
ReportData report_of(const std::string& path) {
    Recording recording(path);
    return build_report(recording);
}

constexpr std::int64_t record_kb = 16;

struct RawRuns {
    TempDir dir;
    std::string data = dir.file("data.raw");
    RawRuns() { mkdata({"raw", data, "--count", "1024", "--record-size", "16KiB"}); } // 16 MiB
    // Persistent workers over 4 epochs: long enough epochs for a rollup sample in each.
    ReportData run(const std::string& name, std::vector<std::string> extra) {
        std::vector<std::string> args{data,         "--record-size", "16KiB",       "--epochs",
                                      "4",          "--persistent",  "--step-time", "20ms",
                                      "--interval", "rollup=250ms"};
        args.insert(args.end(), extra.begin(), extra.end());
        replay(dir.file(name), args);
        return report_of(dir.file(name));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(findings)

// 11 and the extra one, with the baseline as control of both: worker 1 leaks 16 MiB per epoch;
// main fills 64 MiB before forking 3 workers (Σ RSS then counts it 3 more times: 192 MiB).
BOOST_AUTO_TEST_CASE(leak_and_buffer_built_before_fork) {
    RawRuns runs;
    const ReportData baseline = runs.run("baseline.db", {"--workers", "3"});
    for (const char* kind : {"anon_leak", "inherited_anon", "copy_on_read", "pinned_staging",
                             "lmdb_opened_before_fork", "per_generation_reset",
                             "file_growth_persistent_workers", "readahead_amplification"})
        require_none(baseline, kind);
    BOOST_TEST(baseline.diagnosis.epochs.size() == 4u);
    BOOST_TEST(baseline.diagnosis.epochs_source == "markers");

    const ReportData leak =
        runs.run("leak.db", {"--workers", "3", "--leak-per-epoch", "16", "--leak-worker", "1"});
    const Finding& f = require_one(leak, "anon_leak", 16 * 1024.0);
    BOOST_TEST(f.slot == 1);
    BOOST_TEST(std::string(to_string(f.severity)) == "critical");
    BOOST_TEST(leak.diagnosis.findings.front().kind == "anon_leak"); // the most severe first
    // The same through the CLI: the text opens with the verdict, the JSON has the stable keys.
    const std::string text = run({cli_path(), "report", runs.dir.file("leak.db")}).out;
    const auto verdict = text.find("\nVerdict");
    BOOST_TEST(verdict < text.find("\nTree totals"));
    BOOST_TEST(text.find("[critical] growth in worker 1 is anonymous", verdict) ==
               text.find('\n', verdict + 1) + 3);
    const auto json =
        nlohmann::json::parse(run({cli_path(), "report", "--json", runs.dir.file("leak.db")}).out);
    BOOST_TEST(json["schedulers"].size() == 6u);
    BOOST_TEST(json["schedulers"][0]["key"] == "slurm_linux");
    BOOST_TEST(json["epochs"]["source"] == "markers");
    BOOST_TEST(json["epochs"]["list"].size() == 4u);
    BOOST_TEST(json["findings"][0]["kind"] == "anon_leak");
    BOOST_TEST(json["findings"][0]["slot"] == 1);
    BOOST_TEST(json["findings"][0]["figure"]["unit"] == "KiB/epoch");
    BOOST_TEST(json["rss_pss_gap"].contains("causes"));
    BOOST_TEST(json["growth"].size() == 4u); // main and 3 slots

    const ReportData before_fork =
        runs.run("prefork.db", {"--workers", "3", "--prefork-anon", "64"});
    const Finding& g = require_one(before_fork, "inherited_anon", 3 * 64 * 1024.0);
    BOOST_TEST(g.process_ids.size() == 4u); // the 3 workers and main
    require_none(before_fork, "anon_leak");
    // The gap between Σ RSS and Σ PSS is ranked by cause: anonymous memory first, not a file.
    BOOST_REQUIRE(!before_fork.diagnosis.gap.empty());
    BOOST_TEST(before_fork.diagnosis.gap.front().cause == "anon");
}

// 7: workers visit main's 64 MiB heap of small objects (refcount writes): each copies it
// privately while its RSS stays where fork left it. Control: the same run without the heap.
BOOST_AUTO_TEST_CASE(copy_on_read) {
    RawRuns runs;
    const ReportData cow =
        runs.run("cow.db", {"--workers", "2", "--read", "pread", "--cow-heap", "64"});
    const Finding& f = require_one(cow, "copy_on_read", 64 * 1024.0);
    BOOST_TEST(f.process_ids.size() == 2u);
    require_none(cow, "anon_leak"); // RSS did not grow: not a leak
    const ReportData control = runs.run("no-cow.db", {"--workers", "2", "--read", "pread"});
    require_none(control, "copy_on_read");
}

// 8 and 9: 4 workers x prefetch 3 x batch 16 x 16 KiB = 3 MiB of batches in shared memory; with
// --pin, main's staging locked: 2 x 2 x 16 x 16 KiB = 1 MiB. Controls: no workers (no shared
// batches), no --pin.
BOOST_AUTO_TEST_CASE(shared_memory_batches_and_pinned_staging) {
    RawRuns runs;
    const ReportData shm =
        runs.run("shm.db", {"--workers", "4", "--prefetch", "3", "--batch", "16"});
    require_one(shm, "shared_memory_batches", 4 * 3 * 16 * record_kb);
    require_none(shm, "pinned_staging");
    const ReportData pinned =
        runs.run("pin.db", {"--workers", "2", "--prefetch", "2", "--batch", "16", "--pin"});
    require_one(pinned, "pinned_staging", 2 * 2 * 16 * record_kb);
    require_one(pinned, "shared_memory_batches", 2 * 2 * 16 * record_kb);
    const ReportData in_main = runs.run("main.db", {"--workers", "0", "--batch", "16"});
    require_none(in_main, "shared_memory_batches");
}

// 2 and 3: 1000 random 4 KiB records of a 128 MiB file from a cold cache: readahead fills far
// more of the page cache than is read (the oracle: the test's own mincore of the file over the
// loader's count of distinct bytes). Controls: MADV_RANDOM; a sequential pass of the whole file
// (which also shows scenario 1's finding for the file).
BOOST_AUTO_TEST_CASE(readahead_amplification) {
    TempDir dir;
    const std::string data = dir.file("big.raw");
    mkdata({"raw", data, "--count", "32768", "--record-size", "4KiB"});
    auto run = [&](const std::string& name, std::vector<std::string> extra) {
        residency::make_cold(data);
        std::vector<std::string> args{
            data, "--record-size", "4KiB",           "--workers", "2", "--batch",
            "8",  "--interval",    "residency=250ms"};
        args.insert(args.end(), extra.begin(), extra.end());
        replay(dir.file(name), args);
        const std::int64_t cached = residency::cached_pages(data) * residency::page_size();
        Recording recording(dir.file(name));
        return std::pair{build_report(recording), cached};
    };
    const auto [random, cached] =
        run("random.db", {"--pattern", "random", "--num-samples", "1000"});
    BOOST_REQUIRE(!random.loader.progress.empty());
    const double read = static_cast<double>(random.loader.progress.back().distinct_bytes);
    const Finding& f =
        require_one(random, "readahead_amplification", static_cast<double>(cached) / read);
    BOOST_TEST(f.file == data);
    const auto [advised, cached_advised] =
        run("advised.db", {"--pattern", "random", "--num-samples", "1000", "--advice", "random"});
    require_none(advised, "readahead_amplification");
    const auto [sequential, cached_all] = run("sequential.db", {"--pattern", "sequential"});
    require_none(sequential, "readahead_amplification");
    const auto shared = of_kind(sequential, "shared_file_cache");
    BOOST_REQUIRE_EQUAL(shared.size(), 1u);
    BOOST_TEST(shared[0]->file == data);
}

// 4, 5 and 6: LMDB, 16 random records of 128 KiB per epoch per worker. Persistent workers keep
// the pages of data.mdb they touched: their RSS of it grows at every epoch's end (the oracle: the
// kernel's smaps rows of that file at the epoch-end markers, read from the table). Re-forked
// workers start low each generation; an environment opened in main before fork is named.
BOOST_AUTO_TEST_CASE(lmdb_persistent_growth_generation_reset_and_env_before_fork) {
    TempDir dir;
    const std::string db = dir.file("data.lmdb");
    mkdata({"lmdb", db, "--count", "800", "--value-size", "128KiB"});
    // The oracle below reads each worker's maps row at every epoch end; a marker's sample holds
    // one only while the maps tier is within its CPU budget (on a slow machine it was not, and
    // worker 0 had none): a budget of 50% keeps it within.
    // clang-format off
    const std::vector<std::string> common{
        db, "--workers", "4", "--batch", "1", "--prefetch", "1", "--epochs", "3",
        "--pattern", "random", "--num-samples", "64", "--step-time", "30ms",
        "--cpu-budget", "50%"};
    // clang-format on
    auto args = common;
    args.push_back("--persistent");
    replay(dir.file("persistent.db"), args);
    Recording recording(dir.file("persistent.db"));
    const ReportData persistent = build_report(recording);
    // Per worker: data.mdb's RSS in the maps row at each epoch-end marker's sample.
    const std::int64_t object = object_id_of(recording, "/data.mdb");
    BOOST_REQUIRE(object > 0);
    const auto maps = recording.maps();
    double growth = 0;
    int workers = 0;
    for (const ProcessInfo& w : workers_of(recording)) {
        std::vector<std::int64_t> at_end;
        for (int e = 0; e < 3; ++e) {
            const std::int64_t end = marker_time(recording, "epoch " + std::to_string(e) + " end");
            std::int64_t rss = -1;
            for (const auto& row : maps)
                if (row.process_id == w.id && row.object_id == object && row.t_ms >= end &&
                    row.t_ms <= end + 100 && rss < 0)
                    rss = row.figures.rss_kb;
            at_end.push_back(rss);
        }
        BOOST_REQUIRE_MESSAGE(at_end[0] >= 0 && at_end[2] >= 0, "worker " << w.slot);
        growth += static_cast<double>(at_end[2] - at_end[0]) / 2;
        ++workers;
    }
    const Finding& f =
        require_one(persistent, "file_growth_persistent_workers", growth / workers, 0.10);
    BOOST_TEST(f.file == db + "/data.mdb");
    require_none(persistent, "per_generation_reset");
    require_none(persistent, "lmdb_opened_before_fork");
    require_none(persistent, "anon_leak");

    args = common;
    args.insert(args.end(), {"--lmdb-open", "parent"});
    replay(dir.file("reforked.db"), args);
    const ReportData reforked = report_of(dir.file("reforked.db"));
    BOOST_TEST(of_kind(reforked, "per_generation_reset").size() == 1u, kinds(reforked));
    BOOST_TEST(of_kind(reforked, "lmdb_opened_before_fork").size() == 1u, kinds(reforked));
    require_none(reforked, "file_growth_persistent_workers");
    BOOST_TEST(reforked.diagnosis.epochs.size() == 3u);
}

// 11 without epochs, as most real scripts run: no markers (the loader is run bare under
// `record`, its marker and event files unset) and persistent workers (no generations). Growth is
// judged over each worker's life after its first seconds: worker 2 leaks 8 MiB per epoch, so over
// the window its Private_Dirty grows by a whole number of 8 MiB steps. Control: no leak.
BOOST_AUTO_TEST_CASE(leak_without_epochs_is_judged_over_time) {
    RawRuns runs;
    auto record = [&](const std::string& name, std::vector<std::string> extra) {
        std::vector<std::string> argv{cli_path(),
                                      "record",
                                      "-q",
                                      "-o",
                                      runs.dir.file(name),
                                      "--",
                                      "env",
                                      "-u",
                                      "LOADERLENS_MARKERS",
                                      "-u",
                                      "LOADERLENS_LOADER_EVENTS",
                                      "-u",
                                      "LOADERLENS_SAMPLED",
                                      cli_path(),
                                      "load",
                                      "--quiet",
                                      runs.data,
                                      "--record-size",
                                      "16KiB",
                                      "--workers",
                                      "3",
                                      "--persistent",
                                      "--epochs",
                                      "7",
                                      "--step-time",
                                      "30ms"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        const RunResult result = run(argv, std::chrono::seconds(120));
        BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
        return report_of(runs.dir.file(name));
    };
    const ReportData leak = record("trend.db", {"--leak-per-epoch", "8", "--leak-worker", "2"});
    BOOST_TEST(leak.diagnosis.epochs.empty());
    const auto found = of_kind(leak, "anon_leak");
    BOOST_REQUIRE_MESSAGE(found.size() == 1u, kinds(leak));
    BOOST_TEST(found[0]->slot == 2);
    const double steps = found[0]->figure / (8 * 1024.0);
    BOOST_TEST_MESSAGE("anon_leak over time: " << found[0]->figure << " KiB = " << steps
                                               << " epochs of 8 MiB");
    BOOST_TEST(steps >= 2.9);
    BOOST_TEST(steps <= 7.0);
    // The figure is the difference of two of the worker's own smaps_rollup readings, the ones
    // the finding names, read back here with SQL. Not a whole number of steps: on a loaded node
    // the worker's memset of an epoch's 8 MiB stretches over hundreds of ms, and a reading lands
    // in it (17 of 17 runs under stress-ng had one; the CI run that asserted whole steps failed
    // at 3.39).
    const GrowthFigure* dirty = nullptr;
    for (const SlotGrowth& g : leak.diagnosis.growth)
        if (g.slot == 2) dirty = g.find("private_dirty");
    BOOST_REQUIRE(dirty && dirty->trend_from_ms && dirty->trend_to_ms);
    SqlFile db(runs.dir.file("trend.db"), true);
    auto reading_at = [&](std::int64_t t_ms) {
        const auto v = db.strings(fmt::format(
            "SELECT r.private_dirty_kb FROM rollup_samples r JOIN processes p ON p.id = "
            "r.process_id WHERE p.role = 'worker' AND p.slot = 2 AND r.private_dirty_kb IS NOT "
            "NULL AND r.t_ms <= {} ORDER BY r.t_ms DESC LIMIT 1",
            t_ms));
        return v.empty() ? -1.0 : std::stod(v.front());
    };
    const double from_kb = reading_at(*dirty->trend_from_ms),
                 to_kb = reading_at(*dirty->trend_to_ms);
    BOOST_TEST(found[0]->figure == to_kb - from_kb, "readings " << from_kb << " -> " << to_kb);
    const ReportData control = record("no-leak.db", {});
    require_none(control, "anon_leak");
    require_none(control, "file_growth_persistent_workers");
}

BOOST_AUTO_TEST_SUITE_END()
