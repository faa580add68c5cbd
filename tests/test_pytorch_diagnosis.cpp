// SPDX-License-Identifier: MIT
// The "done when" with real PyTorch (Debian's python3-torch 1.13): user report 000's
// setup (np.load(mmap_mode) in the Dataset's __init__, 5 workers, shuffle, no epoch markers)
// recorded inside a job that SLURM granted 512 MiB. The report must say the file's memory is not
// a leak, name the file, give the overstatement, and what SLURM's modes count against the limit.
#include "loaderlens/report.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

const std::string python = "/usr/bin/python3"; // Debian's, with Debian's numpy and torch
const std::string script = std::string(LOADERLENS_FIXTURES_DIR) + "/../pytorch/seed000_mmap.py";

} // namespace

BOOST_AUTO_TEST_SUITE(pytorch_diagnosis)

BOOST_AUTO_TEST_CASE(seed_000_mmap_npy_five_workers, *LOADERLENS_MAY_SKIP) {
    const bool has_torch = run({python, "-c", "import torch, numpy"}).exit_code == 0;
    if (!precondition(has_torch, "python3-torch is not installed (" + python + ")",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string data = dir.file("x_data.npy"), out = dir.file("seed.db");
    // 4000 rows of 4096 float32: 62.5 MiB.
    BOOST_REQUIRE(run({cli_path(), "mkdata", "npy", data, "--count", "4000", "--shape", "4096",
                       "--dtype", "f4"})
                      .exit_code == 0);
    const RunResult recorded = run({"/usr/bin/env", "SLURM_MEM_PER_NODE=512", cli_path(), "record",
                                    "-q", "-o", out, "--", python, script, data, "3", "0.03"},
                                   std::chrono::seconds(180));
    BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
    Recording recording(out);
    const ReportData report = build_report(recording);
    const Diagnosis& d = report.diagnosis;

    // No markers, workers re-forked: the epochs are the generations.
    BOOST_TEST(d.epochs_source == "generations");
    BOOST_TEST(d.epochs.size() == 3u);
    const Finding* shared = nullptr;
    for (const Finding& f : d.findings) {
        BOOST_TEST(f.kind != "anon_leak");
        BOOST_TEST(f.kind != "file_growth_persistent_workers");
        if (f.kind == "shared_file_cache" && f.file == data) shared = &f;
    }
    BOOST_REQUIRE_MESSAGE(shared, "no shared_file_cache finding for " << data);
    // Five workers each map most of the file; PSS counts it once.
    BOOST_TEST(shared->figure >= 3.0);
    BOOST_TEST(shared->figure <= 5.5);
    // SLURM granted 512 MiB: Σ RSS is over it, Σ PSS under it.
    BOOST_TEST(d.limit.source == "SLURM_MEM_PER_NODE");
    const SchedulerView* linux_view = d.view("slurm_linux");
    const SchedulerView* pss_view = d.view("slurm_usepss");
    BOOST_REQUIRE(linux_view && pss_view && linux_view->margin_kb && pss_view->margin_kb);
    BOOST_TEST(*linux_view->margin_kb < 0);
    BOOST_TEST(*pss_view->margin_kb > 0);
    BOOST_TEST(d.findings.front().kind == "limit_near");

    const std::string text = run({cli_path(), "report", out}).out;
    const std::string verdict = text.substr(0, text.find("\nTree totals"));
    BOOST_TEST(verdict.find("not a leak") != std::string::npos, verdict);
    BOOST_TEST(verdict.find(data) != std::string::npos);
    BOOST_TEST(verdict.find("SLURM jobacct_gather/linux UsePss") != std::string::npos);
    BOOST_TEST(verdict.find("SLURM jobacct_gather/cgroup") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
