// SPDX-License-Identifier: MIT
// The job totals of `merge` (docs/merge.md) for two tasks of one step on one node, recorded at the
// same time in one memory cgroup (the test's own, as a step's tasks share the step's): the cgroup
// views count that cgroup once (its readings by both recorders are one series), and the views
// that leave the recorder out of their figure add the recorders of the parts in their run at the
// peak, as each part's own report adds its recorder (SLURM counts the recorder: a process of the
// step). The real-SLURM comparison with sacct is tests/slurm's.
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

using namespace loaderlens::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::vector<std::string> task_on_node(int task, const std::string& out, const std::string& data) {
    std::vector<std::string> argv{"env",
                                  "SLURM_JOB_ID=4343",
                                  "SLURM_STEP_ID=0",
                                  "SLURM_PROCID=" + std::to_string(task),
                                  "SLURMD_NODENAME=nodeA",
                                  cli_path(),
                                  "record",
                                  "-q",
                                  "--interval",
                                  "cgroup=100ms",
                                  "-o",
                                  out,
                                  "--"};
    for (const std::string& word : workload(data, 1, 16, 1, 1500))
        argv.push_back(word);
    return argv;
}

json report_json(const std::string& recording) {
    const RunResult r = run({cli_path(), "report", "--json", recording});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

const json& view_of(const json& report, const std::string& key) {
    for (const json& v : report["schedulers"])
        if (v["key"] == key) return v;
    BOOST_FAIL("no view " << key);
    throw;
}

} // namespace

BOOST_AUTO_TEST_SUITE(merge_totals)

BOOST_AUTO_TEST_CASE(one_cgroup_per_node_once_and_the_recorders_counted) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), a = dir.file("t0.db"), b = dir.file("t1.db"),
                      job = dir.file("job.db");
    make_file(data, 8 << 20);
    {
        Child first(task_on_node(0, a, data));
        const RunResult second = run(task_on_node(1, b, data));
        BOOST_REQUIRE_MESSAGE(second.exit_code == 0, second.err);
        const auto status = first.wait(60s);
        BOOST_REQUIRE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    }
    const RunResult merged = run({cli_path(), "merge", "-q", a, b, "-o", job});
    BOOST_REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
    const json total = report_json(job), own[] = {report_json(a), report_json(b)};
    const json& parts = total["merged"]["parts"];
    BOOST_TEST_REQUIRE(parts.size() == 2u);
    BOOST_TEST(parts[0]["host"] == parts[1]["host"]);

    for (const char* key : {"slurm_cgroup", "cgroup_usage", "k8s_working_set"}) {
        const json& v = view_of(total, key);
        if (v["peak_kib"].is_null()) {
            BOOST_TEST_MESSAGE(key << ": no memory cgroup readable here");
            continue;
        }
        // One cgroup read by both recorders: the job's peak is its highest reading, not a sum.
        std::int64_t highest = 0;
        for (const json& o : own)
            highest = std::max(highest, view_of(o, key)["peak_kib"].get<std::int64_t>());
        BOOST_TEST(v["peak_kib"].get<std::int64_t>() == highest, key);
        BOOST_TEST(v["recorder_in_figure"].get<bool>(), key);
        BOOST_TEST(v["counted_kib"] == v["peak_kib"], key);
    }

    for (const char* key : {"slurm_linux", "slurm_usepss", "slurm_noshared"}) {
        const json& v = view_of(total, key);
        BOOST_TEST_REQUIRE(!v["peak_kib"].is_null(), key);
        const std::int64_t at = v["peak_ms"];
        std::int64_t recorders = 0;
        int running = 0;
        for (int i = 0; i < 2; ++i) {
            const std::int64_t from = parts[i]["offset_ms"],
                               to = from + parts[i]["duration_ms"].get<std::int64_t>();
            if (at < from || at > to) continue;
            const json& share = view_of(own[i], key)["recorder_kib"];
            BOOST_TEST_REQUIRE(!share.is_null(), key << " of part " << i);
            recorders += share.get<std::int64_t>();
            ++running;
        }
        BOOST_TEST(running >= 1, key);
        BOOST_TEST(v["recorder_kib"] == recorders, key << ": " << v["recorder_kib"]);
        BOOST_TEST(v["counted_kib"] == v["peak_kib"].get<std::int64_t>() + recorders, key);
    }
}

BOOST_AUTO_TEST_SUITE_END()
