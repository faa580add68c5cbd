// SPDX-License-Identifier: MIT
#include "consumers_agree_compare.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>

namespace loaderlens::test::consumers_agree {

namespace {

// The lines of a merged recording's `check` output named after `part` ("node07: slurm_linux
// peak"), without the name: what `check` prints of a single recording.
std::string part_lines(const std::string& check, const std::string& part) {
    std::string out;
    const std::string tag = part + ": ";
    for (std::string line : lines_of(check)) {
        const auto at = line.find(tag);
        if (at == std::string::npos) continue;
        line.erase(at, tag.size());
        out += line + "\n";
    }
    return out;
}

// The OpenMetrics samples of one part: its part label, and its node and SLURM task.
std::vector<MetricLine> part_metrics(const std::vector<MetricLine>& all, const json& part) {
    const std::string node = part["host"].is_string() ? part["host"].get<std::string>() : "";
    const std::string task = part["task"].is_string() ? part["task"].get<std::string>() : "";
    std::vector<MetricLine> out;
    for (const MetricLine& m : all) {
        const auto p = m.labels.find("part"), n = m.labels.find("node"),
                   t = m.labels.find("slurm_task");
        if (p != m.labels.end() && p->second == part["name"].get<std::string>() &&
            n != m.labels.end() && n->second == node && t != m.labels.end() && t->second == task)
            out.push_back(m);
    }
    return out;
}

} // namespace

void merged_against_parts(const std::string& recording, const Outputs& o, Compare& c) {
    const auto lines = lines_of(o.text);
    // The job totals table: each view's peak and when, as the JSON has them.
    for (const json& v : o.report["schedulers"]) {
        const std::string name = v["name"];
        const auto row = line_starting(lines, "  " + name + " ");
        c.holds(row.has_value(), "merged report text: no job totals row for " + name);
        if (row && !v["peak_kib"].is_null())
            c.in_order("merged job total " + name, *row,
                       {size(v["peak_kib"]), seconds(v["peak_ms"])});
    }
    // Each part, as the parts table and as its own recording.
    TempDir dir;
    const std::string budget = dir.file("budget.toml");
    std::vector<json> part_reports;
    for (const json& part : o.report["merged"]["parts"])
        part_reports.push_back(
            json::parse(cli_out({cli_path(), "report", "--part", part["name"].get<std::string>(),
                                 "--json", recording})));
    std::ofstream(budget) << budget_for(o.report, {}, part_reports);
    const RunResult checked = run({cli_path(), "check", "--budget", budget, recording});
    BOOST_CHECK_MESSAGE(checked.exit_code == 0 || checked.exit_code == 3,
                        "check failed: " << checked.out << checked.err);
    std::size_t i = 0;
    for (const json& part : o.report["merged"]["parts"]) {
        const std::string name = part["name"];
        const json& own = part_reports[i++];
        const auto row = line_starting(lines, "  " + name + " ");
        c.holds(row.has_value(), "merged report text: no parts row for " + name);
        std::vector<std::string> peaks;
        for (const json& v : part["schedulers"]) {
            // "175.3M/+116.8M": the peak and the margin to its limit, where it has one.
            peaks.push_back(compact(v["peak_kib"]) +
                            (v["margin_kib"].is_null()
                                 ? std::string()
                                 : (v["margin_kib"].get<std::int64_t>() < 0 ? "/-" : "/+") +
                                       format_kib(std::abs(v["margin_kib"].get<std::int64_t>()),
                                                  SizeStyle::compact)));
            // The part's line of the merged JSON is the part's own report (on the job's clock).
            for (const json& w : own["schedulers"])
                if (w["key"] == v["key"]) {
                    c.same("merged part " + name + " " + v["key"].get<std::string>() +
                               " peak vs report --part",
                           v["peak_kib"].dump(), w["peak_kib"].dump());
                    if (!w["peak_ms"].is_null())
                        c.same("merged part " + name + " " + v["key"].get<std::string>() +
                                   " peak time vs report --part + offset",
                               v["peak_ms"].dump(),
                               std::to_string(w["peak_ms"].get<std::int64_t>() +
                                              part["offset_ms"].get<std::int64_t>()));
                }
        }
        if (row) c.tokens_in_order("merged parts row " + name, *row, peaks);
        Outputs po;
        po.text = cli_out({cli_path(), "report", "--part", name, recording});
        po.report = own;
        po.metrics = part_metrics(o.metrics, part);
        po.check = part_lines(checked.out, name);
        text_against_json(po, c);
        openmetrics_against(po, c);
        check_against(po, c);
    }
}

} // namespace loaderlens::test::consumers_agree
