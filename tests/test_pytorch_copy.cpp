// SPDX-License-Identifier: MIT
// Issue 26's "done when" for copy-on-read with real PyTorch (Debian's python3-torch): workers that
// walk a Python list built before fork copy its pages in their first moments
// (tests/pytorch/copy_on_read.py). Found with its size per worker (against each worker's own
// smaps_rollup Private_Dirty, read by the job) also when the copy was over before the recorder's
// first PSS reading of the workers (a recorder attached with --pid once the walks are done); the
// numpy control gets no such finding.
#include "finding_support.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

const std::string python = "/usr/bin/python3"; // Debian's, with Debian's numpy and torch
const std::string script = std::string(LOADERLENS_FIXTURES_DIR) + "/../pytorch/copy_on_read.py";
constexpr int workers = 3;

bool has_torch() {
    return precondition(run({python, "-c", "import torch, numpy"}).exit_code == 0,
                        "python3-torch or python3-numpy is missing (" + python + ")",
                        InCi::must_have);
}

// The job's own Private_Dirty per worker at its last batch, averaged (KiB).
double oracle_private_dirty(const std::string& path) {
    std::ifstream in(path);
    const auto json = nlohmann::json::parse(in).at("private_dirty_kb");
    BOOST_REQUIRE_EQUAL(json.size(), static_cast<std::size_t>(workers));
    double sum = 0;
    for (const auto& [pid, kb] : json.items())
        sum += kb.get<double>();
    return sum / workers;
}

void check_found(const ReportData& report, double truth) {
    const auto found = of_kind(report, "copy_on_read");
    BOOST_REQUIRE_MESSAGE(found.size() == 1u, kinds(report));
    BOOST_TEST_MESSAGE("copy_on_read: " << found[0]->figure << " KiB per worker, the job's own "
                                        << truth << " KiB");
    BOOST_TEST(found[0]->process_ids.size() == static_cast<std::size_t>(workers));
    BOOST_TEST(truth > 64 * 1024.0); // the walk really copied: the comparison means something
    BOOST_TEST(std::abs(found[0]->figure - truth) <= 0.05 * truth);
}

// Whether the recording holds a PSS reading of every worker (read while it is being written).
bool every_worker_read(const std::string& path) {
    if (!std::filesystem::exists(path)) return false;
    try {
        Recording recording(path);
        const RecordingData data = recording.read_all();
        std::set<std::int64_t> workers_seen, read;
        for (const ProcessInfo& p : data.processes)
            if (p.role == Role::worker) workers_seen.insert(p.id);
        for (const auto& row : data.rollup)
            if (workers_seen.contains(row.sample.process_id) && row.sample.private_dirty)
                read.insert(row.sample.process_id);
        return workers_seen.size() == static_cast<std::size_t>(workers) &&
               read.size() == workers_seen.size();
    } catch (const RecordingError&) {
        return false; // not readable yet
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(pytorch_copy)

BOOST_AUTO_TEST_CASE(a_copy_over_before_the_first_pss_reading_is_found, *LOADERLENS_MAY_SKIP) {
    if (!has_torch()) return;
    TempDir dir;
    const std::string out = dir.file("attached.db"), oracle = dir.file("attached.json"),
                      go = dir.file("go");
    Child job({python, script, "list", std::to_string(workers), oracle, go});
    BOOST_REQUIRE_MESSAGE(job.wait_for_line("copied", std::chrono::seconds(120)), job.output());
    // The walks are over: the recorder meets workers whose pages are copied already.
    Child recorder({cli_path(), "record", "-q", "-o", out, "--pid", std::to_string(job.pid())});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!every_worker_read(out) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50)); // polling the recording
    BOOST_REQUIRE_MESSAGE(every_worker_read(out), "the recorder read no PSS of every worker");
    std::ofstream(go).put('\n');
    BOOST_REQUIRE(job.wait(std::chrono::seconds(120)) == std::optional<int>(0));
    BOOST_REQUIRE(recorder.wait(std::chrono::seconds(60)) == std::optional<int>(0));
    Recording recording(out);
    const ReportData report = build_report(recording);
    check_found(report, oracle_private_dirty(oracle));
    const auto found = of_kind(report, "copy_on_read");
    BOOST_TEST(found[0]->title.find("before their first PSS reading") != std::string::npos,
               found[0]->title);
}

BOOST_AUTO_TEST_CASE(a_copy_in_a_recorded_job_is_found_and_numpy_is_not, *LOADERLENS_MAY_SKIP) {
    if (!has_torch()) return;
    TempDir dir;
    for (const std::string kind : {"list", "numpy"}) {
        const std::string out = dir.file(kind + ".db"), oracle = dir.file(kind + ".json");
        const RunResult recorded = run({cli_path(), "record", "-q", "-o", out, "--", python, script,
                                        kind, std::to_string(workers), oracle},
                                       std::chrono::seconds(180));
        BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
        Recording recording(out);
        const ReportData report = build_report(recording);
        if (kind == "list")
            check_found(report, oracle_private_dirty(oracle));
        else
            BOOST_TEST(of_kind(report, "copy_on_read").empty(), kinds(report));
    }
}

BOOST_AUTO_TEST_SUITE_END()
