// SPDX-License-Identifier: MIT
// `export --format openmetrics` (docs/metrics.md), read back with
// the tests' own exposition reader (exposition.hpp) and promtool, and held against the same
// recording read through `export --format json` / `report --json` and against the kernel.
#include "consumers_agree.hpp"
#include "metrics_support.hpp"
#include "precondition.hpp"
#include "textfile_support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace loaderlens;
using namespace loaderlens::test;
using nlohmann::json;

namespace {

// `export --format json`'s key for each per-process family.
struct JsonFigure {
    const char* family;
    const char* table;
    const char* key;
};
constexpr JsonFigure json_figures[] = {
    {"loaderlens_process_rss_bytes", "fast", "rss"},
    {"loaderlens_process_rss_anon_bytes", "fast", "anon"},
    {"loaderlens_process_rss_file_bytes", "fast", "file"},
    {"loaderlens_process_rss_shmem_bytes", "fast", "shmem"},
    {"loaderlens_process_swap_bytes", "fast", "swap"},
    {"loaderlens_process_pss_bytes", "rollup", "pss"},
    {"loaderlens_process_uss_bytes", "rollup", "uss"},
    {"loaderlens_process_pss_anon_bytes", "rollup", "pss_anon"},
    {"loaderlens_process_pss_file_bytes", "rollup", "pss_file"},
    {"loaderlens_process_pss_shmem_bytes", "rollup", "pss_shmem"},
    {"loaderlens_process_private_dirty_bytes", "rollup", "private_dirty"},
};

} // namespace

BOOST_AUTO_TEST_SUITE(openmetrics)

// The snapshot: every series' latest value, equal to the last row `export --format json` has of
// each process, the tree sums' last tick, and the report's scheduler views and findings.
BOOST_AUTO_TEST_CASE(export_is_each_series_latest_value, *LOADERLENS_MAY_SKIP) {
    if (!precondition(has_promtool(), "promtool (Debian package prometheus) is not installed",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string out = dir.file("run.db"), om = dir.file("run.om");
    const RunResult recorded = run(record_argv(dir, out, {}, 1500));
    BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
    // Every figure the export shares with report, report --json, export json/csv and check.
    BOOST_TEST(check_consumers_agree(out) > 20);
    const RunResult exported =
        run({cli_path(), "export", "--format", "openmetrics", "-o", om, out});
    BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
    const std::string text = read_text(om);
    BOOST_TEST(text.ends_with("# EOF\n"));
    const Exposition e = parse_exposition(text, true);
    BOOST_REQUIRE_MESSAGE(e.error.empty(), e.error);
    const PromtoolResult lint = promtool_check(om);
    BOOST_TEST(lint.exit_code == 0, "promtool: " << lint.err << lint.out);
    BOOST_TEST(lint.err.empty(), lint.err);

    const json all = run_json({cli_path(), "export", "--format", "json", out});
    const json report = run_json({cli_path(), "report", "--json", out});
    for (const auto& [name, type] : e.type) {
        BOOST_TEST(type == "gauge", name);
        if (name.ends_with("_bytes")) BOOST_TEST(e.unit.at(name) == "bytes", name);
    }
    for (const ExpositionSample& s : e.samples)
        BOOST_TEST(s.labels.at("node") == all["meta"]["host"].get<std::string>(), s.name);

    std::map<std::int64_t, json> processes;
    for (const json& p : all["processes"])
        processes[p["id"].get<std::int64_t>()] = p;
    int compared = 0;
    for (const JsonFigure& f : json_figures) {
        std::map<std::int64_t, json> last; // each process's last row of the table
        for (const json& row : all["series"][f.table])
            last[row["process_id"].get<std::int64_t>()] = row;
        std::size_t available = 0;
        for (const auto& [id, row] : last) {
            const json& p = processes.at(id);
            const std::string pid = std::to_string(p["pid"].get<int>());
            const auto want = json_bytes(row[f.key]);
            BOOST_TEST(e.value(f.family, {{"pid", pid}}) == want, f.family << " pid " << pid);
            if (!want) continue; // unavailable: left out, never 0
            ++available;
            const auto found = e.find(f.family, {{"pid", pid}});
            BOOST_REQUIRE(found.size() == 1u);
            BOOST_TEST(found[0]->labels.at("role") == p["role"].get<std::string>());
            BOOST_TEST(found[0]->labels.at("slot") ==
                       (p["slot"].is_null() ? "" : std::to_string(p["slot"].get<int>())));
            ++compared;
        }
        BOOST_TEST(e.find(f.family).size() == available, f.family);
    }
    BOOST_TEST(compared >= 3 * 5, "main and 2 workers, at least their fast figures");
    require_tree_sums(e, all);
    // The figure the report holds against the limit, and the recorder's own (the textfile's).
    require_counted_as_the_report(e, report);
    BOOST_TEST(e.value("loaderlens_recorder_peak_rss_bytes") ==
               json_bytes(report["meta"]["recorder_peak_rss_kb"].is_string()
                              ? nlohmann::json(std::stoll(
                                    report["meta"]["recorder_peak_rss_kb"].get<std::string>()))
                              : nlohmann::json()));

    for (const json& view : report["schedulers"]) {
        const std::map<std::string, std::string> v{{"view", view["key"].get<std::string>()}};
        BOOST_TEST(e.value("loaderlens_scheduler_peak_bytes", v) == json_bytes(view["peak_kib"]));
        BOOST_TEST(e.value("loaderlens_scheduler_limit_bytes", v) ==
                   json_bytes(view["limit"]["kib"]));
        const json& points = all["schedulers"][view["key"].get<std::string>()];
        if (!points.empty())
            BOOST_TEST(e.value("loaderlens_scheduler_bytes", v) ==
                       json_bytes(points.back()["kib"]));
    }
    // What the kernel holds: Σ RSS at its peak counts the file once per worker.
    const auto linux_peak = e.value("loaderlens_scheduler_peak_bytes", {{"view", "slurm_linux"}});
    BOOST_REQUIRE(linux_peak);
    BOOST_TEST(*linux_peak >= 2 * (32 + 8) * mib);

    std::map<std::pair<std::string, std::string>, long double> findings, written;
    for (const json& f : report["findings"])
        findings[{f["kind"].get<std::string>(), f["severity"].get<std::string>()}] += 1;
    for (const ExpositionSample* s : e.find("loaderlens_finding"))
        written[{s->labels.at("kind"), s->labels.at("severity")}] = std::stold(s->value);
    BOOST_TEST((written == findings));
    BOOST_TEST(e.value("loaderlens_recording_live") == 0.0L);
    BOOST_TEST(e.find("loaderlens_recording_info", {{"kernel", all["meta"]["kernel"]}}).size() ==
               1u);
    // The data file's page cache: written by the test just before, all of it cached.
    const auto cached = e.find("loaderlens_file_cached_bytes");
    BOOST_REQUIRE(cached.size() == 1u);
    BOOST_TEST(cached[0]->labels.at("file").ends_with("/data.bin"));
    BOOST_TEST(std::stold(cached[0]->value) >= 0.9L * 32 * mib);
    BOOST_TEST(std::stold(cached[0]->value) <= 32 * mib);
}

// --timestamps: every tick, dated; promtool backfills it into TSDB blocks, and the samples it
// reads back are the tree's Σ PSS at each rollup tick as the JSON export has them.
BOOST_AUTO_TEST_CASE(timestamps_backfill_with_promtool, *LOADERLENS_MAY_SKIP) {
    if (!precondition(has_promtool(), "promtool (Debian package prometheus) is not installed",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string out = dir.file("run.db"), om = dir.file("ts.om"), tsdb = dir.file("tsdb");
    const RunResult recorded = run(record_argv(dir, out, {}, 1500));
    BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
    const RunResult exported =
        run({cli_path(), "export", "--format", "openmetrics", "--timestamps", "-o", om, out});
    BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);
    const Exposition e = parse_exposition(read_text(om), true);
    BOOST_REQUIRE_MESSAGE(e.error.empty(), e.error);
    for (const ExpositionSample& s : e.samples)
        BOOST_TEST(s.timestamp.has_value(), s.name);
    const RunResult blocks =
        run({"promtool", "tsdb", "create-blocks-from", "openmetrics", om, tsdb});
    BOOST_REQUIRE_MESSAGE(blocks.exit_code == 0, blocks.err << blocks.out);
    std::filesystem::create_directories(tsdb + "/wal"); // dump reads the WAL too
    const RunResult dump = run({"promtool", "tsdb", "dump", tsdb});
    BOOST_REQUIRE_MESSAGE(dump.exit_code == 0, dump.err);
    std::map<std::int64_t, long double> dumped, want;
    const std::string prefix = "{__name__=\"loaderlens_tree_pss_bytes\"";
    for (const std::string& line : lines_of(dump.out)) {
        if (!line.starts_with(prefix)) continue;
        std::istringstream fields(line.substr(line.find("} ") + 2));
        long double value = 0;
        std::int64_t ms = 0;
        fields >> value >> ms;
        dumped[ms] = value;
    }
    const json all = run_json({cli_path(), "export", "--format", "json", out});
    const std::int64_t start_ms =
        std::stoll(all["meta"]["start_unix_ns"].get<std::string>()) / 1'000'000;
    for (const json& p : all["tree"]["pss"])
        if (auto bytes = json_bytes(p["kib"]))
            want[start_ms + p["t_ms"].get<std::int64_t>()] = *bytes;
    BOOST_TEST(want.size() >= 3u); // 1.5 s of holding, PSS every 250 ms
    BOOST_TEST((dumped == want), dumped.size() << " samples dumped, " << want.size() << " ticks");

    const RunResult csv = run({cli_path(), "export", "--format", "csv", "--timestamps", out});
    BOOST_TEST(csv.exit_code == 2);
    BOOST_TEST(one_line(csv.err), csv.err);
    BOOST_TEST(csv.err.find("--timestamps") != std::string::npos, csv.err);
}

BOOST_AUTO_TEST_SUITE_END()
