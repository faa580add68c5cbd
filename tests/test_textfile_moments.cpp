// SPDX-License-Identifier: MIT
// The live textfile (docs/metrics.md, "The live textfile"): its tree sums come from one moment
// (a worker that exited after the last rollup tick once left Σ PSS of that tick above Σ RSS of a
// later fast tick), and a recorder killed outright is told by the age of the stamp each rewrite
// carries, with the alert rule docs/metrics.md gives, run by promtool on series that stop.
#include "loaderlens/live_metrics.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "made_recordings.hpp"
#include "precondition.hpp"
#include "textfile_support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <fstream>
#include <regex>
#include <sys/wait.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

ProcessInfo process(std::int64_t id, Role role, int slot) {
    ProcessInfo p;
    p.id = id;
    p.key = {static_cast<int>(100 + id), static_cast<std::uint64_t>(id)};
    p.role = role;
    p.slot = p.generation = slot;
    return p;
}

// The alert rule file docs/metrics.md gives (its ```yaml block after "alert rule"), as written.
std::string documented_rule() {
    const std::string doc =
        read_text(std::string(LOADERLENS_FIXTURES_DIR) + "/../../docs/metrics.md");
    const auto at = doc.find("```yaml\ngroups:");
    BOOST_REQUIRE_MESSAGE(at != std::string::npos, "docs/metrics.md: no ```yaml groups: block");
    const auto end = doc.find("```\n", at + 8);
    BOOST_REQUIRE(end != std::string::npos);
    return doc.substr(at + 8, end - at - 8);
}

} // namespace

BOOST_AUTO_TEST_SUITE(textfile_moments)

BOOST_AUTO_TEST_CASE(tree_sums_of_one_moment_after_a_worker_exited) {
    TempDir dir;
    const std::string path = dir.file("made.db");
    {
        Recorder recorder(path, false);
        recorder.set_meta("start_unix_ns", "1795000000000000000");
        SampleBatch tree;
        tree.t_ms = 100;
        tree.born = {process(1, Role::main, -1), process(2, Role::worker, 0)};
        tree.fast.push_back({.process_id = 1, .rss = 1000});
        tree.fast.push_back({.process_id = 2, .rss = 4000});
        recorder.write(tree);
        SampleBatch deep; // the rollup tick of the tree listed at 100 ms
        deep.t_ms = 150;
        deep.rollup.push_back(
            {.process_id = 1, .rss = 1000, .pss = 700, .private_clean = 0, .private_dirty = 600});
        deep.rollup.push_back(
            {.process_id = 2, .rss = 4000, .pss = 3500, .private_clean = 0, .private_dirty = 3400});
        recorder.write(deep);
        SampleBatch exited; // the worker has gone; no rollup tick since
        exited.t_ms = 300;
        exited.fast.push_back({.process_id = 1, .rss = 1100});
        recorder.write(exited);
        recorder.finish("finished", 400);
    }
    recording_made(path);
    Recording reading(path);
    Cursor cursor;
    LiveMetrics live;
    live.add(reading.read_new(cursor));
    const Exposition e = parse_exposition(live.textfile(false), false);
    BOOST_REQUIRE_MESSAGE(e.error.empty(), e.error);
    BOOST_TEST(e.value("loaderlens_tree_rss_bytes") == 5000 * 1024.0L); // at 100 ms, not 300
    BOOST_TEST(e.value("loaderlens_tree_pss_bytes") == 4200 * 1024.0L);
    BOOST_TEST(e.value("loaderlens_tree_uss_bytes") == 4000 * 1024.0L);
    // The main's own series is its latest (the role's figures are each tier's latest tick).
    BOOST_TEST(e.value("loaderlens_process_rss_bytes", {{"role", "main"}}) == 1100 * 1024.0L);
    require_one_tick_tree_sums(e, run_json({cli_path(), "export", "--format", "json", path}));
}

BOOST_AUTO_TEST_CASE(a_killed_recorder_is_told_by_the_documented_alert, *LOADERLENS_MAY_SKIP) {
    if (!precondition(has_promtool(), "promtool (Debian package prometheus) is not installed",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string out = dir.file("run.db"), prom = dir.file("ll.prom");
    Child recorder(record_argv(dir, out, {"--metrics-textfile", prom}, 60'000), false);
    BOOST_REQUIRE(recorder.wait_for_line("ready 0", 20s));
    std::optional<long double> stamp;
    for (auto until = std::chrono::steady_clock::now() + 20s;
         !stamp && std::chrono::steady_clock::now() < until;) {
        if (std::filesystem::exists(prom))
            stamp = parse_exposition(read_text(prom), false)
                        .value("loaderlens_textfile_write_timestamp_seconds");
        if (!stamp) recorder.wait(20ms);
    }
    BOOST_REQUIRE_MESSAGE(stamp, "no rewrite stamp in " << prom);
    const long double now =
        std::chrono::duration<long double>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    BOOST_TEST(std::abs(now - *stamp) < 3.0L, "stamp " << *stamp << " at " << now);
    ::kill(recorder.pid(), SIGKILL); // as OverMemoryKill does
    const auto status = recorder.wait(20s);
    BOOST_REQUIRE(status && WIFSIGNALED(*status));
    const Exposition left = parse_exposition(read_text(prom), false);
    BOOST_REQUIRE_MESSAGE(left.error.empty(), left.error);
    BOOST_TEST(left.value("loaderlens_recording_live") == 1.0L); // what it cannot say itself
    BOOST_TEST(left.value("loaderlens_textfile_write_timestamp_seconds") <= now + 1.0L);

    // The documented rule, on series shaped as a scrape sees them: a stamp that advances with
    // each scrape, then stops (killed), and one that ends (the file left at the end has none).
    const std::string rules = dir.file("rules.yml"), tests = dir.file("tests.yml");
    std::ofstream(rules) << documented_rule();
    std::ofstream(tests) << R"(rule_files: [rules.yml]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'loaderlens_textfile_write_timestamp_seconds{node="n1",slurm_task="0"}'
        values: '0+15x4 60x12'
      - series: 'loaderlens_textfile_write_timestamp_seconds{node="n1",slurm_task="1"}'
        values: '0+15x4 stale'
    alert_rule_test:
      - eval_time: 75s
        alertname: LoaderlensRecorderGone
        exp_alerts: []
      - eval_time: 4m
        alertname: LoaderlensRecorderGone
        exp_alerts:
          - exp_labels: {severity: warning, node: n1, slurm_task: "0"}
            exp_annotations:
              summary: "loaderlens on n1 (job , task 0) stopped rewriting its textfile: the recorder was killed or is stuck"
)";
    const RunResult checked =
        run({"/bin/sh", "-c", "cd '" + dir.path().string() + "' && promtool test rules tests.yml"});
    BOOST_TEST(checked.exit_code == 0, checked.out << checked.err);
}

BOOST_AUTO_TEST_SUITE_END()
