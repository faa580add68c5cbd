// SPDX-License-Identifier: MIT
// The report judged by what the job's site applies (docs/slurm.md, "What the site applies"), on
// real recordings made inside a faked SLURM job: SLURM's variables set by the test and an
// scontrol that prints texts captured from SLURM 22.05 (tests/fixtures/slurm) with the settings
// under test. The real cluster is tests/slurm/slurm_verdicts.py; these run everywhere.
#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sys/stat.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
using nlohmann::json;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    BOOST_REQUIRE_MESSAGE(in, "missing " << path);
    return {std::istreambuf_iterator<char>(in), {}};
}

const std::string hold_memory =
    std::string(LOADERLENS_FIXTURES_DIR) + "/../workload/hold_memory.py";

// A directory with bin/scontrol answering `show config` with SLURM 22.05's text where the
// accounting lines say `params` and `frequency`, and `show step` with `mem` for every step.
struct FakeSite {
    TempDir dir;
    FakeSite(const std::string& params, const std::string& frequency, const std::string& mem) {
        std::string config =
            slurp(std::string(LOADERLENS_FIXTURES_DIR) + "/slurm/scontrol_show_config.txt");
        config = std::regex_replace(config, std::regex("JobAcctGatherParams *= *[^\n]*"),
                                    "JobAcctGatherParams     = " + params);
        config = std::regex_replace(config, std::regex("JobAcctGatherFrequency *= *[^\n]*"),
                                    "JobAcctGatherFrequency  = " + frequency);
        std::filesystem::create_directory(dir.file("bin"));
        std::ofstream(dir.file("config.txt")) << config;
        std::ofstream(dir.file("step.txt"))
            << "StepId=55.0 UserId=0 StartTime=2026-11-29T00:02:55 TimeLimit=UNLIMITED\n"
               "   State=RUNNING Partition=test NodeList=vm\n"
               "   Nodes=1 CPUs=2 Tasks=2 Name=sh Network=(null)\n"
               "   TRES=cpu=2,mem=" +
                   mem + ",node=1\n";
        std::ofstream(dir.file("bin/scontrol"))
            << "#!/bin/sh\ncase \"$1 $2\" in\n'show config') exec /usr/bin/cat '"
            << dir.file("config.txt") << "';;\n'show step') exec /usr/bin/cat '"
            << dir.file("step.txt") << "';;\nesac\nexit 1\n";
        BOOST_REQUIRE(::chmod(dir.file("bin/scontrol").c_str(), 0755) == 0);
    }
    // `record` of task `task` (of 2 on the node) of step 55.0, holding `anon_mib` in one worker.
    std::vector<std::string> task(int task, long anon_mib, const std::string& ramp = "0") const {
        return {"env",
                "-u",
                "SLURM_CONF",
                "PATH=" + dir.file("bin") + ":/usr/bin:/bin",
                "SLURM_JOB_ID=55",
                "SLURM_STEP_ID=0",
                "SLURM_PROCID=" + std::to_string(task),
                "SLURM_LOCALID=" + std::to_string(task),
                "SLURM_GTIDS=0,1",
                "SLURM_MEM_PER_NODE=900",
                "SLURMD_NODENAME=node7",
                cli_path(),
                "record",
                "-q",
                "-o",
                dir.file("t-%j.%s.%t.db"),
                "--",
                "/usr/bin/python3",
                hold_memory,
                std::to_string(anon_mib),
                "-",
                "1",
                dir.file("ready." + std::to_string(task)),
                dir.file("release"),
                ramp};
    }
    std::string db(int task) const { return dir.file("t-55.0." + std::to_string(task) + ".db"); }
};

json report_json(const std::string& db, const std::vector<std::string>& more = {}) {
    std::vector<std::string> argv{cli_path(), "report", "--json", db};
    argv.insert(argv.end(), more.begin(), more.end());
    RunResult r = run(argv);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

const json& view(const json& report, const std::string& key) {
    for (const json& v : report["schedulers"])
        if (v["key"] == key) return v;
    BOOST_FAIL("no view " << key);
    static const json none;
    return none;
}

bool has_finding(const json& report, const std::string& kind, const std::string& severity) {
    for (const json& f : report["findings"])
        if (f["kind"] == kind && f["severity"] == severity) return true;
    return false;
}

// Runs both tasks until each holds its memory, sampled by its recorder, then releases them.
void run_two_tasks(const FakeSite& site, long anon_mib, const std::string& ramp_s = "0") {
    Child a(site.task(0, anon_mib, ramp_s)), b(site.task(1, anon_mib, ramp_s));
    for (int t = 0; t < 2; ++t) {
        const std::string ready = site.dir.file("ready." + std::to_string(t));
        for (int i = 0; i < 600 && !std::filesystem::exists(ready); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50)); // polling for a file
        BOOST_REQUIRE_MESSAGE(std::filesystem::exists(ready), "task " << t << " never held");
    }
    std::ofstream(site.dir.file("release")).put('\n');
    BOOST_REQUIRE(a.wait(std::chrono::seconds(60)) == 0);
    BOOST_REQUIRE(b.wait(std::chrono::seconds(60)) == 0);
}

} // namespace

BOOST_AUTO_TEST_SUITE(site_verdicts)

// Two tasks of one step on one node, 160 MiB each, under a step limit of 300 MiB: alone each is
// within it, their sum is not. Each task's report finds the other's recording, sums the two per
// tick (the peak of the sum is the sum of two plateaus held at once), adds both recorders, and
// judges that against the step's memory; without the sibling's file it says what is missing.
BOOST_AUTO_TEST_CASE(tasks_of_a_step_are_judged_by_their_sum) {
    FakeSite site("OverMemoryKill", "task=30", "300M");
    run_two_tasks(site, 160);
    const json r0 = report_json(site.db(0)), r1 = report_json(site.db(1));
    for (const json* r : {&r0, &r1}) {
        const json& rss = view(*r, "slurm_linux");
        BOOST_TEST(rss["site_role"] == "enforced");
        BOOST_TEST(rss["limit"]["kib"] == 300 * 1024);
        const json& node = rss["node"];
        BOOST_REQUIRE(node.is_object());
        BOOST_TEST(node["tasks"] == 2);
        BOOST_TEST(node["recorded"] == 2);
        BOOST_TEST(rss["margin_kib"].get<std::int64_t>() > 0);
        BOOST_TEST(node["margin_kib"].get<std::int64_t>() < 0);
        // Both plateaus were held at once (each task released only when both were sampled).
        const std::int64_t peaks = view(r0, "slurm_linux")["peak_kib"].get<std::int64_t>() +
                                   view(r1, "slurm_linux")["peak_kib"].get<std::int64_t>();
        BOOST_TEST(node["peak_kib"].get<std::int64_t>() <= peaks);
        BOOST_TEST(node["peak_kib"].get<std::int64_t>() >= peaks - 4 * mib_kb);
        const std::int64_t recorders = view(r0, "slurm_linux")["recorder_kib"].get<std::int64_t>() +
                                       view(r1, "slurm_linux")["recorder_kib"].get<std::int64_t>();
        BOOST_TEST(node["recorders_kib"].get<std::int64_t>() == recorders);
        BOOST_TEST(node["counted_kib"].get<std::int64_t>() ==
                   node["peak_kib"].get<std::int64_t>() + recorders);
        BOOST_TEST(has_finding(*r, "limit_near", "critical"));
        BOOST_TEST(!has_finding(*r, "step_tasks_on_node", "warning"));
    }
    RunResult text = run({cli_path(), "report", site.db(0)});
    BOOST_TEST(text.out.find("Σ over the 2 tasks on this node") != std::string::npos);
    BOOST_TEST(text.out.find("the 2 tasks of step 55.0 on this node") != std::string::npos);

    // check's min_margin is the same judgement: the node sum against the step's memory.
    std::ofstream(site.dir.file("budget.toml")) << "[schedulers]\nmin_margin = \"1MiB\"\n";
    RunResult check =
        run({cli_path(), "check", "--budget", site.dir.file("budget.toml"), site.db(0)});
    BOOST_TEST(check.exit_code == 3);
    BOOST_TEST(check.out.find("FAIL  schedulers  slurm_linux margin") != std::string::npos);
    BOOST_TEST(check.out.find("summed over the 2 tasks of the step on this node") !=
               std::string::npos);

    // Merged, each task is a part, and a part's report sums the other part as the task's report
    // sums the file beside it: one margin.
    RunResult merged =
        run({cli_path(), "merge", site.db(0), site.db(1), "-o", site.dir.file("job.db")});
    BOOST_REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
    const json job = report_json(site.dir.file("job.db"));
    BOOST_REQUIRE(job["merged"]["parts"].size() == 2u);
    for (const json& part : job["merged"]["parts"]) {
        const json one = report_json(site.dir.file("job.db"), {"--part", part["name"]});
        BOOST_TEST(view(one, "slurm_linux")["node"]["margin_kib"] ==
                   view(r0, "slurm_linux")["node"]["margin_kib"]);
    }
    bool merged_verdict = false;
    for (const json& f : job["findings"])
        merged_verdict =
            merged_verdict ||
            (f["kind"] == "limit_near" &&
             f["title"].get<std::string>().find("the 2 tasks of step 55.0") != std::string::npos);
    BOOST_TEST(merged_verdict);

    std::filesystem::rename(site.db(1), site.dir.file("elsewhere.db"));
    const json alone = report_json(site.db(0));
    BOOST_TEST(view(alone, "slurm_linux")["node"]["recorded"] == 1);
    BOOST_TEST(view(alone, "slurm_linux")["node"]["counted_kib"].is_null());
    BOOST_TEST(has_finding(alone, "step_tasks_on_node", "warning"));
    BOOST_TEST(!has_finding(alone, "limit_near", "critical"));
    BOOST_TEST(alone["site"]["node_tasks_missing"].dump().find("t-55.0.1.db") != std::string::npos);
}

// A site that counts Σ PSS and polls every second: its view comes first and is the one judged;
// --accounting names another. The tasks ramp for 3 s, so SLURM's polls of the run (at 16 phases
// of its 1 s period, over the two tasks' sum) see at most its peak and no less than it held two
// seconds before the end (each task's ramp adds 40 MiB over 3 s).
BOOST_AUTO_TEST_CASE(the_site_mode_first_and_accounting_overrides_it) {
    FakeSite site("UsePss,OverMemoryKill", "1", "900M");
    run_two_tasks(site, 40, "3");
    const json r = report_json(site.db(0));
    const json& pss = view(r, "slurm_usepss");
    BOOST_REQUIRE(pss["polled"].is_object());
    BOOST_TEST(pss["polled"]["period_s"] == 1);
    BOOST_TEST(pss["polled"]["phases"] == 16);
    // SLURM polls the step: both tasks' sum (their recordings were found side by side).
    BOOST_REQUIRE(pss["node"]["counted_kib"].is_number());
    const std::int64_t peak = pss["node"]["peak_kib"].get<std::int64_t>();
    BOOST_TEST(pss["polled"]["high_kib"].get<std::int64_t>() <= peak);
    BOOST_TEST(pss["polled"]["low_kib"].get<std::int64_t>() <=
               pss["polled"]["likely_kib"].get<std::int64_t>());
    // The last poll of any phase falls in the run's last second and sees the latest sample
    // before it, at most one PSS interval (1 s) older: no lower than the sum 2 s before the end.
    const json& points = pss["node"]["points"];
    const std::int64_t end = points.back()[0].get<std::int64_t>();
    std::int64_t floor = 0;
    for (const json& p : points)
        if (p[0].get<std::int64_t>() <= end - 2000 && p[1].is_number())
            floor = p[1].get<std::int64_t>();
    BOOST_TEST(floor > 0);
    BOOST_TEST(pss["polled"]["low_kib"].get<std::int64_t>() >= floor);
    BOOST_TEST(r["site"]["view"] == "slurm_usepss");
    BOOST_TEST(r["site"]["poll_s"] == 1);
    BOOST_TEST(r["site"]["source"] == "scontrol show config");
    BOOST_TEST(r["schedulers"][0]["key"] == "slurm_usepss");
    BOOST_TEST(view(r, "slurm_linux")["site_role"].is_null());
    const json linux = report_json(site.db(0), {"--accounting", "linux"});
    BOOST_TEST(linux["site"]["view"] == "slurm_linux");
    BOOST_TEST(linux["site"]["source"] == "report --accounting");
    BOOST_TEST(linux["schedulers"][0]["key"] == "slurm_linux");
    RunResult text = run({cli_path(), "report", site.db(0)});
    BOOST_TEST(text.out.find("SLURM polls every 1 s on this site") != std::string::npos);
    RunResult bad = run({cli_path(), "report", "--accounting", "bogus", site.db(0)});
    BOOST_TEST(bad.exit_code == 2);
    BOOST_TEST(lines_of(bad.err).size() == 1u);
    BOOST_TEST(bad.err.find("--accounting bogus") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
