// SPDX-License-Identifier: MIT
// Issue 26's "done when" with real PyTorch (Debian's python3-torch): persistent DataLoader workers
// over an np.load(mmap_mode="r") .npy and over an LMDB that the job builds itself, recorded with
// `record`'s defaults while stress-ng keeps both cores busy. The growth finding must name the
// file, give each worker's growth per epoch within 5% of the job's own smaps at the epoch ends
// (tests/pytorch/persistent_growth.py reads them while the workers are idle, then marks the epoch
// and waits for the recorder's acknowledgement), say the PSS stayed flat and that it is not a
// leak; the same jobs with non-persistent workers get no growth finding.
#include "finding_support.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/units.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

const std::string python = "/usr/bin/python3"; // Debian's, with Debian's numpy, torch and lmdb
const std::string script =
    std::string(LOADERLENS_FIXTURES_DIR) + "/../pytorch/persistent_growth.py";
constexpr int epochs = 4, workers = 3;

bool has_python_modules() {
    return precondition(run({python, "-c", "import torch, numpy, lmdb"}).exit_code == 0,
                        "python3-torch, python3-numpy or python3-lmdb is missing (" + python + ")",
                        InCi::must_have);
}

// Both cores busy for as long as it lives (a loaded node), stopped with its process group.
struct CpuHog {
    Child child{{"stress-ng", "--cpu", "2", "--timeout", "600s", "--quiet"}};
};

struct Job {
    ReportData report;
    std::string file;                                  // the data file the workers mapped
    std::vector<std::map<std::string, double>> oracle; // per epoch end: pid -> file RSS (KiB)
    std::int64_t file_bytes = 0;                       // the file's size after the job
};

void require_none(const ReportData& report, const std::string& kind) {
    BOOST_TEST(of_kind(report, kind).empty(), kind << " found: " << kinds(report));
}

// `marked`: the job marks its epochs (as docs/recording.md shows); else it runs as user report
// 002's did, without markers, for 3 times as many epochs: growth is then judged over time, after
// each worker's first 2 s (4 quick epochs on an idle machine left too little of that).
Job record_job(const TempDir& dir, const std::string& kind, const std::string& data,
               bool persistent, bool under_load, bool marked = true) {
    const std::string out = dir.file(kind + (persistent ? "-persistent" : "-fresh") +
                                     (marked ? "" : "-unmarked") + ".db");
    const std::string oracle = out + ".json";
    std::optional<CpuHog> hog;
    if (under_load) hog.emplace();
    std::vector<std::string> argv{cli_path(), "record", "-q", "-o", out, "--"};
    if (!marked)
        argv.insert(argv.end(), {"env", "-u", "LOADERLENS_MARKERS", "-u", "LOADERLENS_SAMPLED"});
    argv.insert(argv.end(),
                {python, script, kind, data, std::to_string(marked ? epochs : 3 * epochs),
                 persistent ? "1" : "0", std::to_string(workers), oracle});
    const RunResult recorded = run(argv, std::chrono::seconds(240));
    hog.reset();
    BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
    Job job;
    Recording recording(out);
    job.report = build_report(recording);
    std::ifstream in(oracle);
    const auto json = nlohmann::json::parse(in);
    job.file = json.at("file").get<std::string>();
    for (const auto& end : json.at("epoch_ends")) {
        std::map<std::string, double> by_pid;
        for (const auto& [pid, kb] : end.items())
            by_pid[pid] = kb.get<double>();
        job.oracle.push_back(by_pid);
    }
    job.file_bytes = static_cast<std::int64_t>(std::filesystem::file_size(job.file));
    // Neither job leaks, and an LMDB built (and closed) in main before the loader started is no
    // environment inherited at fork: both came as false findings of such a job before.
    require_none(job.report, "anon_leak");
    require_none(job.report, "lmdb_opened_before_fork");
    return job;
}

// The oracle's growth per epoch, per worker, averaged: (last epoch end - first) / (epochs - 1).
double oracle_growth_per_epoch(const Job& job) {
    BOOST_REQUIRE_EQUAL(job.oracle.size(), static_cast<std::size_t>(epochs)); // marked jobs
    double sum = 0;
    for (const auto& [pid, first] : job.oracle.front())
        sum += (job.oracle.back().at(pid) - first) / (epochs - 1);
    return sum / static_cast<double>(job.oracle.front().size());
}

void check_persistent(const Job& job) {
    const auto found = of_kind(job.report, "file_growth_persistent_workers");
    BOOST_REQUIRE_MESSAGE(found.size() == 1u, kinds(job.report));
    const Finding& f = *found[0];
    BOOST_TEST(f.file == job.file);
    BOOST_TEST(f.figure_name == "growth_per_epoch_kb");
    const double truth = oracle_growth_per_epoch(job);
    BOOST_TEST_MESSAGE(job.file << ": growth per worker per epoch " << f.figure
                                << " KiB, the job's own smaps " << truth << " KiB");
    BOOST_TEST(truth > 1024.0); // the job really grew: the comparison below means something
    BOOST_TEST(std::abs(f.figure - truth) <= 0.05 * truth);
    BOOST_TEST(f.title.find("not a leak") != std::string::npos, f.title);
    bool pss_flat = false, sized = false;
    const std::string size = "the file is " + format_kib(job.file_bytes / 1024);
    for (const std::string& line : f.evidence) {
        pss_flat = pss_flat || (line.find("PSS") != std::string::npos &&
                                line.find("(flat)") != std::string::npos);
        sized = sized || line.find(size) != std::string::npos;
    }
    std::string evidence;
    for (const std::string& line : f.evidence)
        evidence += "\n  " + line;
    BOOST_TEST(pss_flat, "no evidence line says the PSS stayed flat:" << evidence);
    BOOST_TEST(sized, "no evidence line says '" << size << "'");
    require_none(job.report, "anon_leak");
}

} // namespace

BOOST_AUTO_TEST_SUITE(pytorch_growth)

BOOST_AUTO_TEST_CASE(persistent_workers_over_a_mapped_npy_under_load, *LOADERLENS_MAY_SKIP) {
    if (!has_python_modules()) return;
    TempDir dir;
    const std::string data = dir.file("x.npy");
    // 512 records of 256 KiB (128 MiB), a quarter of them drawn anew each epoch: each
    // persistent worker maps a little more of the file every epoch.
    BOOST_REQUIRE(run({cli_path(), "mkdata", "npy", data, "--count", "512", "--shape", "65536",
                       "--dtype", "f4"})
                      .exit_code == 0);
    check_persistent(record_job(dir, "npy", data, true, true));
    const Job fresh = record_job(dir, "npy", data, false, false);
    require_none(fresh.report, "file_growth_persistent_workers");
}

BOOST_AUTO_TEST_CASE(persistent_workers_over_an_lmdb_built_in_the_job_under_load,
                     *LOADERLENS_MAY_SKIP) {
    if (!has_python_modules()) return;
    TempDir dir;
    const Job persistent = record_job(dir, "lmdb", dir.file("db"), true, true);
    check_persistent(persistent);
    // The job built data.mdb while it was followed: its report gives the size it ended with.
    bool listed = false;
    for (const FileSummary& file : persistent.report.files)
        if (file.object.path == persistent.file) {
            listed = true;
            BOOST_TEST(file.object.size_bytes.value_or(-1) == persistent.file_bytes);
        }
    BOOST_TEST(listed, persistent.file << " is not among the report's files");
    std::filesystem::remove_all(dir.file("db"));
    const Job fresh = record_job(dir, "lmdb", dir.file("db"), false, false);
    require_none(fresh.report, "file_growth_persistent_workers");
    // Without markers (epochs unknown): the same growth, judged over time.
    std::filesystem::remove_all(dir.file("db"));
    const Job unmarked = record_job(dir, "lmdb", dir.file("db"), true, false, false);
    const auto over_time = of_kind(unmarked.report, "file_growth_persistent_workers");
    // On a failure, what the rule saw: each slot's RSS of the file at both ends of its trend
    // window (after the settling time), against the 16 MiB the rule asks for. It failed once in
    // CI (2026-11-29, the machine running other tests beside it) with no figures to read.
    std::string trends;
    for (const SlotGrowth& g : unmarked.report.diagnosis.growth)
        for (const GrowthFigure& f : g.figures)
            if (f.figure == "file" && f.path == unmarked.file)
                trends += "; " + g.label + " gens " + std::to_string(g.generations) + ": " +
                          (f.trend_first ? std::to_string(*f.trend_first) : "-") + " KiB at " +
                          (f.trend_from_ms ? std::to_string(*f.trend_from_ms) : "-") + " ms -> " +
                          (f.trend_last ? std::to_string(*f.trend_last) : "-") + " KiB at " +
                          (f.trend_to_ms ? std::to_string(*f.trend_to_ms) : "-") + " ms";
    BOOST_TEST_MESSAGE("unmarked, over time" << trends);
    BOOST_REQUIRE_MESSAGE(over_time.size() == 1u, kinds(unmarked.report) << trends);
    BOOST_TEST(over_time[0]->file == unmarked.file);
    BOOST_TEST(over_time[0]->figure_name == "growth_kb");
    BOOST_TEST(over_time[0]->title.find("not a leak") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
