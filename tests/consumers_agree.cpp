// SPDX-License-Identifier: MIT
#include "consumers_agree.hpp"

#include "consumers_agree_compare.hpp"
#include "loaderlens/diagnosis.hpp"
#include "loaderlens/figure_text.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/units.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::test {

namespace consumers_agree {

std::string cli_out(const std::vector<std::string>& argv) {
    auto result = run(argv, std::chrono::seconds(120));
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0,
                          argv.at(1) << " failed (" << result.exit_code << "): " << result.err);
    return result.out;
}

// `report` text and JSON: the scheduler table, the limit finding, the tree totals, the
// processes' rows, the mapped files.
void text_against_json(const Outputs& o, Compare& c) {
    const auto lines = lines_of(o.text);
    const json& r = o.report;
    for (const json& v : r["schedulers"]) {
        const std::string name = v["name"];
        // The row of the full table ("Scheduler views in full") whose next line names the view
        // in full, after the site's role if any: "      KILLS: SLURM jobacct_gather/linux: ...".
        std::optional<std::string> row;
        for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
            const std::string& next = lines[i + 1];
            if (!lines[i].starts_with("    ") || lines[i].starts_with("      ") ||
                !next.starts_with("      "))
                continue;
            const std::size_t at = next.find(name + ": ");
            const std::string before = next.substr(6, at == std::string::npos ? 0 : at - 6);
            if (at != std::string::npos && (before.empty() || before == "KILLS: " ||
                                            before == "RECORDS: " || before == "if counted: ")) {
                row = lines[i];
                break;
            }
        }
        c.holds(row.has_value(), "report text: no scheduler row for " + name);
        if (!row) continue;
        if (v["peak_kib"].is_null()) {
            c.in_order("scheduler " + name, *row, {"n/a"});
            continue;
        }
        std::vector<std::string> parts{size(v["peak_kib"]), seconds(v["peak_ms"])};
        parts.push_back(v["recorder_in_figure"].get<bool>() ? std::string("included")
                                                            : size(v["recorder_kib"]));
        // What the scheduler counts against the limit (peak + the recorder): the figure the
        // verdict and the margin are about, printed by the table too.
        if (!v["margin_kib"].is_null()) {
            parts.push_back(size(counted_kib(v)));
            parts.push_back(signed_size(v["margin_kib"]));
        }
        c.in_order("report text scheduler row " + name + " vs report --json", *row, parts);
        // The first screen's row of the view ends with its largest holder at the peak.
        if (v.contains("holders") && !v["holders"].empty()) {
            const json& top = v["holders"][0];
            const std::string largest = top["what"].get<std::string>() + " " + size(top["kib"]);
            bool shown = false;
            for (const std::string& line : lines)
                shown = shown || (line.starts_with("  ") && line.ends_with("  " + largest));
            c.holds(shown, "report text: no first-screen row ending with " + largest + " (" + name +
                               "'s largest holder in report --json)");
        }
    }
    // The limit finding's title names the view, what it counts and the margin: the table's.
    for (const json& f : r["findings"]) {
        if (f["kind"] != "limit_near") continue;
        const std::string title = f["title"];
        for (const json& v : r["schedulers"]) {
            if (title.find(": " + v["name"].get<std::string>() + " counts ") == std::string::npos)
                continue;
            c.in_order("limit_near title vs the " + v["key"].get<std::string>() + " row", title,
                       {" counts " + size(counted_kib(v)) + " at its peak, " +
                        size(Kib(std::abs(v["margin_kib"].get<std::int64_t>())))});
            c.same("limit_near key figure vs the view's margin (KiB)",
                   std::to_string(f["figure"]["value"].get<double>()),
                   std::to_string(v["margin_kib"].get<double>()));
        }
    }
    const json& t = r["totals"];
    for (const auto& [label, key] : {std::pair{"  Σ RSS   ", "peak_sum_rss"},
                                     {"  Σ PSS   ", "peak_sum_pss"},
                                     {"  Σ USS   ", "peak_sum_uss"}}) {
        const auto row = line_starting(lines, label);
        c.holds(row.has_value(), std::string("report text: no line ") + label);
        if (row) c.in_order(std::string("tree ") + key, *row, {peak_text(t[key])});
    }
    for (const json& p : r["processes"]) {
        const std::string prefix = fmt::format("  {:>3} {:>7} ", p["id"].get<std::int64_t>(),
                                               p["pid"].get<std::int64_t>());
        const auto row = line_starting(lines, prefix);
        c.holds(row.has_value(), "report text: no process row " + prefix);
        if (!row) continue;
        const json& fin = p["final_kib"];
        c.tokens_in_order("process " + prefix + "row vs report --json", *row,
                          {compact(p["peak_rss"]["kib"]), compact(fin["rss"]),
                           compact(p["peak_pss"]["kib"]), compact(fin["pss"]),
                           compact(p["peak_uss"]["kib"]), compact(fin["uss"]), compact(fin["anon"]),
                           compact(fin["file"]), compact(fin["shmem"])});
        // A final PSS carried from an older reading says how old it is.
        const std::int64_t age = p.value("final_pss_age_ms", std::int64_t{0});
        if (age > 0 && !fin["pss"].is_null())
            c.in_order("process " + prefix + "final PSS age", *row,
                       {compact(fin["pss"]) + " (" + fmt::format("{:.1f}s", age / 1000.0) + ")"});
    }
    for (const json& f : r["files"]) {
        const std::string path = f["path"];
        if (is_shared_library(path)) continue; // one line for all of them
        std::size_t at = 0;
        while (at < lines.size() && !lines[at].starts_with("  " + one_line(path) + "  ("))
            ++at;
        c.holds(at + 1 < lines.size(), "report text: no mapped file " + path);
        if (at + 1 >= lines.size()) continue;
        c.in_order(
            "file " + path + " tree", lines[at + 1],
            {"Σ RSS " + peak_text(f["tree_peak_rss"]), "Σ PSS " + peak_text(f["tree_peak_pss"])});
        std::size_t i = at + 2;
        for (const json& per : f["processes"]) {
            if (i >= lines.size()) break;
            c.in_order("file " + path + " process " + std::to_string(per["process_id"].get<int>()),
                       lines[i++],
                       {"RSS", size(per["peak_rss"]["kib"]), "PSS", size(per["peak_pss"]["kib"])});
        }
    }
}

// `export --format json` and `report --json`: the tree's sums and the scheduler views' series.
void export_json_against_report(const Outputs& o, Compare& c) {
    const json& t = o.report["totals"];
    for (const auto& [figure, key] :
         {std::pair{"rss", "peak_sum_rss"}, {"pss", "peak_sum_pss"}, {"uss", "peak_sum_uss"}}) {
        const json& points = o.exported["tree"][figure];
        const TimedPeak highest = peak_of(points);
        c.same(std::string("tree Σ ") + figure + " peak: export json vs report --json " + key,
               highest.text(), json_peak(t[key]).text());
        bool partial = false;
        for (const json& p : points)
            partial = partial || p["partial"].get<bool>();
        // A job's tick is also partial while a part in its run has no reading yet (aligned_sum),
        // which no count of unreadable processes says: each part's own count is compared with
        // its own report (merged_against_parts).
        if (std::string(figure) == "rss" || o.merged) continue;
        const int unreadable = t["pss_uss_unreadable_processes"].get<int>();
        c.holds(!partial || unreadable > 0,
                std::string("tree Σ ") + figure +
                    ": export json has partial ticks, report --json says complete "
                    "(pss_uss_unreadable_processes 0)");
        c.holds(partial || unreadable == 0,
                std::string("tree Σ ") + figure + ": report --json says partial (" +
                    std::to_string(unreadable) +
                    " processes unreadable), export json has no partial tick");
    }
    for (const json& v : o.report["schedulers"]) {
        const std::string key = v["key"];
        const json& exported = o.exported["schedulers"][key];
        std::string a, b;
        for (const json& p : v["points"])
            a += fmt::format("{}:{} ", p[0].get<std::int64_t>(), p[1].dump());
        for (const json& p : exported)
            b += fmt::format("{}:{} ", p["t_ms"].get<std::int64_t>(), p["kib"].dump());
        c.same("scheduler " + key + " series: report --json vs export json", a, b);
        c.same("scheduler " + key + " peak: report --json vs the export's series",
               json_peak_of(v).text(), peak_of(exported).text());
    }
}

// `export --format csv` against the JSON export (scheduler rows) and the report (processes).
void csv_against(const Outputs& o, Compare& c) {
    std::map<std::string, std::string> views;                // key -> "t:value "...
    std::map<std::int64_t, std::pair<Kib, std::string>> rss; // process id -> peak, last value
    for (const CsvRow& row : csv_rows(o.csv)) {
        if (row.source == "scheduler")
            views[row.metric] += fmt::format("{}:{} ", row.t_ms, row.value ? *row.value : -1);
        if (row.source == "statm" && row.metric == "rss" && row.value) {
            auto& [peak, last] = rss[row.process_id];
            if (!peak || *row.value > *peak) peak = row.value;
            last = std::to_string(*row.value);
        }
    }
    for (const json& v : o.report["schedulers"]) {
        const std::string key = v["key"];
        std::string expected;
        for (const json& p : o.exported["schedulers"][key])
            expected += fmt::format("{}:{} ", p["t_ms"].get<std::int64_t>(),
                                    p["kib"].is_null() ? -1 : p["kib"].get<std::int64_t>());
        c.same("scheduler " + key + " series: export csv vs export json", views[key], expected);
    }
    for (const json& p : o.report["processes"]) {
        const auto it = rss.find(p["id"].get<std::int64_t>());
        if (it == rss.end()) continue;
        c.same("process " + std::to_string(p["id"].get<int>()) + " peak RSS: csv vs report",
               format_kib(it->second.first), size(p["peak_rss"]["kib"]));
        c.same("process " + std::to_string(p["id"].get<int>()) + " final RSS: csv vs report",
               it->second.second, p["final_kib"]["rss"].dump());
    }
}

// `export --format openmetrics` (a snapshot: each series' latest value) against the report.
void openmetrics_against(const Outputs& o, Compare& c) {
    for (const json& v : o.report["schedulers"]) {
        const std::string key = v["key"];
        c.same("openmetrics scheduler_peak " + key + " vs report --json peak",
               metric(o.metrics, "loaderlens_scheduler_peak_bytes", "view", key),
               bytes(v["peak_kib"]));
        // A limit given to `report --mem-limit` is the report's alone: the export has the
        // recording's.
        if (!o.report_limit)
            c.same("openmetrics scheduler_limit " + key + " vs report --json limit",
                   metric(o.metrics, "loaderlens_scheduler_limit_bytes", "view", key),
                   bytes(v["limit"]["kib"]));
        const json& points = v["points"];
        if (!points.empty())
            c.same("openmetrics scheduler " + key + " vs the view's last tick",
                   metric(o.metrics, "loaderlens_scheduler_bytes", "view", key),
                   bytes(points.back()[1]));
    }
    for (const char* figure : {"rss", "pss", "uss"}) {
        if (o.exported.is_null()) break; // a part of a merged recording
        const json& points = o.exported["tree"][figure];
        if (points.empty()) continue;
        c.same(std::string("openmetrics tree ") + figure + " vs export json's last tick",
               metric(o.metrics, std::string("loaderlens_tree_") + figure + "_bytes", "", ""),
               bytes(points.back()["kib"]));
    }
    for (const json& p : o.report["processes"]) {
        const std::string pid = std::to_string(p["pid"].get<std::int64_t>());
        for (const char* figure : {"rss", "pss", "uss"})
            c.same("openmetrics process " + pid + " " + figure + " vs report --json final",
                   metric(o.metrics, std::string("loaderlens_process_") + figure + "_bytes", "pid",
                          pid),
                   bytes(p["final_kib"][figure]));
    }
    std::map<std::string, int> findings;
    for (const json& f : o.report["findings"])
        ++findings[f["kind"].get<std::string>() + "/" + f["severity"].get<std::string>()];
    std::map<std::string, int> exported;
    for (const MetricLine& m : o.metrics)
        if (m.name == "loaderlens_finding")
            exported[m.labels.at("kind") + "/" + m.labels.at("severity")] = std::stoi(m.value);
    c.same("finding kinds and severities: openmetrics vs report --json", to_text(exported),
           to_text(findings));
}

} // namespace consumers_agree

using namespace consumers_agree;

bool can_record_partly_unreadable() {
    return ::geteuid() == 0 && std::filesystem::exists("/usr/bin/setpriv");
}

void record_partly_unreadable(const std::string& dir, const std::string& output) {
    std::filesystem::permissions(dir, std::filesystem::perms(0777));
    const std::string data = dir + "/shared.bin";
    make_file(data, 8 << 20);
    ::chmod(data.c_str(), 0644);
    const std::string nobody = "/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups ";
    auto workload_line = [&](int workers) {
        std::string line;
        for (const std::string& word : workload(data, workers, 4, 1, 3000))
            line += word + " ";
        return line;
    };
    // main (root sh) with a nobody workload of 2 workers and a root workload of 1.
    Child tree({"sh", "-c", nobody + workload_line(2) + "& " + workload_line(1) + "& wait"});
    BOOST_REQUIRE(tree.wait_for_line("ready", std::chrono::seconds(20)));
    BOOST_REQUIRE(tree.wait_for_line("ready", std::chrono::seconds(20)));
    // The recorder follows the tree until it exits (the workloads hold 3 s after "ready").
    auto recorded = run({"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                         cli_path(), "record", "-q", "--pid", std::to_string(tree.pid()), "-o",
                         output, "--interval", "rollup=250ms", "maps=500ms"},
                        std::chrono::seconds(60));
    BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
    BOOST_REQUIRE(tree.wait(std::chrono::seconds(20)).has_value());
}

namespace {

// A recording `report` refuses: every consumer refuses it too, with report's exit code and one
// line naming it.
int check_all_refuse(const std::string& recording, const RunResult& refused) {
    for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
             {cli_path(), "report", recording},
             {cli_path(), "export", "--format", "json", recording},
             {cli_path(), "export", "--format", "csv", recording},
             {cli_path(), "export", "--format", "openmetrics", recording}}) {
        const RunResult r = run(argv, std::chrono::seconds(120));
        const std::string what = argv[1] + (argv.size() > 3 ? " " + argv[3] : std::string());
        BOOST_CHECK_MESSAGE(r.exit_code == refused.exit_code,
                            what << " exits " << r.exit_code << " where report --json exits "
                                 << refused.exit_code << " for " << recording << ": " << r.err);
        BOOST_CHECK_MESSAGE(lines_of(r.err).size() == 1u &&
                                r.err.find(std::filesystem::path(recording).filename().string()) !=
                                    std::string::npos,
                            what << ": not one line naming " << recording << ": " << r.err);
    }
    BOOST_TEST_MESSAGE("consumers agree: all refuse " << recording << " (exit " << refused.exit_code
                                                      << ")");
    return 0;
}

} // namespace

int check_consumers_agree(const std::string& recording, const ConsumersAgreeOptions& options) {
    {
        const RunResult r = run({cli_path(), "report", "--json", recording});
        if (r.exit_code != 0) return check_all_refuse(recording, r);
    }
    TempDir dir;
    Outputs o;
    o.report_limit = !options.mem_limit.empty();
    std::vector<std::string> report{cli_path(), "report", recording};
    if (!options.mem_limit.empty()) report.insert(report.end(), {"--mem-limit", options.mem_limit});
    o.text = cli_out(report);
    report.push_back("--json");
    o.report = json::parse(cli_out(report));
    o.exported = json::parse(cli_out({cli_path(), "export", "--format", "json", recording}));
    o.csv = lines_of(cli_out({cli_path(), "export", "--format", "csv", recording}));
    o.metrics = metric_lines(cli_out({cli_path(), "export", "--format", "openmetrics", recording}));
    Compare c;
    if (!o.report["merged"].is_null()) {
        o.merged = true;
        export_json_against_report(o, c);
        csv_against(o, c);
        merged_against_parts(recording, o, c);
        BOOST_TEST_MESSAGE("consumers agree: " << c.count << " figures compared for " << recording
                                               << " (merged)");
        return c.count;
    }
    const std::string budget = dir.file("budget.toml");
    std::ofstream(budget) << budget_for(o.report, options);
    auto checked = run({cli_path(), "check", "--budget", budget, recording});
    BOOST_CHECK_MESSAGE(checked.exit_code == 0 || checked.exit_code == 3,
                        "check failed: " << checked.out << checked.err);
    o.check = checked.out;

    text_against_json(o, c);
    export_json_against_report(o, c);
    csv_against(o, c);
    openmetrics_against(o, c);
    check_against(o, c);
    BOOST_TEST_MESSAGE("consumers agree: " << c.count << " figures compared for " << recording);
    return c.count;
}

} // namespace loaderlens::test
