// SPDX-License-Identifier: MIT
#include "gui_consumers_agree.hpp"

#include "../consumers_agree_parse.hpp"
#include "../support.hpp"
#include "display_text.hpp"
#include "file_table_model.hpp"
#include "finding_list_model.hpp"
#include "loaderlens/figure_text.hpp"
#include "process_table_model.hpp"
#include "recording_document.hpp"
#include "scheduler_table_model.hpp"

namespace loaderlens::test {

namespace {

using namespace consumers_agree;
using namespace loaderlens::gui;

std::string cell(const QAbstractItemModel& model, int row, int column) {
    return model.index(row, column).data().toString().toStdString();
}

// The scheduler table, the process table, the files and the findings against the report.
void tables(const ReportData& report, const json& r, Compare& c) {
    SchedulerTableModel schedulers;
    std::vector<ProcessInfo> infos;
    for (const auto& p : report.processes)
        infos.push_back(p.info);
    schedulers.set_views(report.diagnosis.schedulers, infos);
    for (int row = 0; row < schedulers.rowCount(); ++row) {
        const std::string key =
            schedulers.index(row, 0).data(SchedulerTableModel::KeyRole).toString().toStdString();
        const json* view = nullptr;
        for (const json& v : r["schedulers"])
            if (v["key"] == key) view = &v;
        c.holds(view != nullptr, "GUI scheduler row " + key + " not in report --json");
        if (!view || (*view)["peak_kib"].is_null()) continue;
        const json& v = *view;
        c.same("GUI " + key + " peak vs report --json",
               cell(schedulers, row, SchedulerTableModel::peak), size(v["peak_kib"]));
        c.same("GUI " + key + " at vs report --json",
               cell(schedulers, row, SchedulerTableModel::at), seconds(v["peak_ms"]));
        if (!v["margin_kib"].is_null()) {
            c.same("GUI " + key + " with the recorder vs report --json limit - margin",
                   cell(schedulers, row, SchedulerTableModel::counted),
                   size(counted_kib(v)) +
                       (v["recorder_in_figure"].get<bool>() ? " (recorder included)" : ""));
            const std::int64_t margin = v["margin_kib"];
            c.same("GUI " + key + " margin vs report --json",
                   cell(schedulers, row, SchedulerTableModel::margin),
                   margin < 0 ? "over by " + size(Kib(-margin))
                              : size(Kib(margin)) + " below the limit");
        }
    }
    ProcessTableModel processes;
    processes.set_processes(report.processes, report.duration_ms);
    for (const json& p : r["processes"]) {
        const int row = processes.row_of(p["id"].get<std::int64_t>());
        const std::string who = "GUI process " + std::to_string(p["id"].get<int>());
        c.holds(row >= 0, who + " missing");
        if (row < 0) continue;
        const json& fin = p["final_kib"];
        const std::int64_t age = p.value("final_pss_age_ms", std::int64_t{0});
        const std::pair<int, std::string> cells[] = {
            {ProcessTableModel::peak_rss, size(p["peak_rss"]["kib"])},
            {ProcessTableModel::peak_pss, size(p["peak_pss"]["kib"])},
            {ProcessTableModel::peak_uss, size(p["peak_uss"]["kib"])},
            {ProcessTableModel::final_rss, size(fin["rss"])},
            {ProcessTableModel::final_pss,
             size(fin["pss"]) + (age > 0 && !fin["pss"].is_null() ? " (" + seconds(age) + " old)"
                                                                  : std::string())},
            {ProcessTableModel::final_uss, size(fin["uss"])}};
        for (const auto& [column, expected] : cells)
            c.same(who + " column " + std::to_string(column) + " vs report --json",
                   cell(processes, row, column), expected);
    }
    FileTableModel files;
    files.set_files(report.files);
    for (const json& f : r["files"]) {
        const int row = files.row_of_path(QString::fromStdString(f["path"].get<std::string>()));
        c.holds(row >= 0, "GUI file missing: " + f["path"].get<std::string>());
        if (row < 0) continue;
        c.same("GUI file Σ RSS vs report --json " + f["path"].get<std::string>(),
               cell(files, row, FileTableModel::peak_rss), size(f["tree_peak_rss"]["kib"]));
        c.same("GUI file Σ PSS vs report --json " + f["path"].get<std::string>(),
               cell(files, row, FileTableModel::peak_pss), size(f["tree_peak_pss"]["kib"]));
    }
    FindingListModel findings;
    findings.set_findings(report.diagnosis.findings);
    const json& listed = r["findings"];
    c.same("GUI findings vs report --json: how many", std::to_string(findings.rowCount()),
           std::to_string(listed.size()));
    for (int row = 0; row < findings.rowCount() && row < static_cast<int>(listed.size()); ++row) {
        const json& f = listed[static_cast<std::size_t>(row)];
        c.same("GUI finding " + std::to_string(row) + " title",
               cell(findings, row, FindingListModel::title), f["title"]);
        const std::string figure = cell(findings, row, FindingListModel::figure);
        // The key figure says what it is, in the size the report and the title use.
        c.holds(figure.find(": ") != std::string::npos,
                "GUI finding key figure without what it is: '" + figure + "'");
        if (f["figure"]["unit"] == "KiB") {
            const auto kb = std::llround(f["figure"]["value"].get<double>());
            c.in_order("GUI finding key figure " + f["kind"].get<std::string>(), figure,
                       {size(Kib(std::llabs(kb)))});
        }
    }
}

// The lanes' sums and the Σ PSS stack against series(), tick by tick, partial flags included.
void lanes(const RecordingDocument& document, Compare& c) {
    const RecordingData& data = document.data();
    const LaneStore& store = document.store();
    for (const LaneKey& lane : store.lanes()) {
        if (lane.kind == LaneKey::Kind::helpers) continue; // no single selector for them
        const Selector selector = lane.kind == LaneKey::Kind::main
                                      ? Selector::of_role(Role::main)
                                      : Selector::worker_slot(lane.slot);
        for (Figure figure : LaneStore::figures) {
            std::string expected, got;
            for (const SeriesPoint& p :
                 series(data, {.figure = figure, .selector = selector}).points)
                if (p.value)
                    expected += fmt::format("{}:{}{} ", p.t_ms, *p.value, p.partial ? "p" : "");
            for (const LanePoint& p : store.points(lane, figure))
                got += fmt::format("{}:{}{} ", p.t_ms, p.kib, p.partial ? "p" : "");
            c.same(fmt::format("GUI lane {} {} vs series()", lane.slot, to_string(figure)), got,
                   expected);
        }
    }
    // The stack's total at each rollup tick is Σ PSS of the tree; partial where series() says.
    std::map<std::int64_t, const StackTick*> ticks;
    for (const StackTick& t : store.stack())
        ticks[t.t_ms] = &t;
    std::string expected, got;
    for (const SeriesPoint& p : series(data, {.figure = Figure::pss}).points) {
        expected += fmt::format("{}:{}{} ", p.t_ms, p.value.value_or(-1), p.partial ? "p" : "");
        auto it = ticks.find(p.t_ms);
        if (it == ticks.end()) {
            got += fmt::format("{}:none ", p.t_ms);
            continue;
        }
        // An unknown lane holds what its readable processes had (a lane may hold several): the
        // stack's total is the sum of what was read, as series()'s partial sum.
        std::int64_t sum = 0;
        for (const std::int64_t kb : it->second->pss_by_lane)
            sum += kb;
        got += fmt::format("{}:{}{} ", p.t_ms, sum, it->second->partial() ? "p" : "");
    }
    c.same("GUI Σ PSS stack vs series(pss, tree)", got, expected);
}

// Where `report` says Σ PSS is partial (processes whose PSS could not be read), the stack does.
void stack_partial(const RecordingDocument& document, const ReportData& report, Compare& c) {
    bool partial = false;
    for (const StackTick& t : document.store().stack())
        partial = partial || t.partial();
    if (report.totals.rollup_unreadable > 0)
        c.holds(partial, fmt::format("report: Σ PSS partial ({} processes unreadable); the GUI's "
                                     "Σ PSS stack has no partial tick",
                                     report.totals.rollup_unreadable));
}

} // namespace

int check_gui_consumers_agree(const std::string& recording) {
    RecordingDocument document;
    BOOST_REQUIRE_MESSAGE(document.open_now(QString::fromStdString(recording)),
                          document.error().toStdString());
    BOOST_REQUIRE(document.wait_for_report(120000));
    BOOST_REQUIRE(document.report());
    const RunResult out =
        run({cli_path(), "report", "--json", recording}, std::chrono::seconds(120));
    BOOST_REQUIRE_MESSAGE(out.exit_code == 0, out.err);
    const json r = json::parse(out.out);
    Compare c;
    tables(*document.report(), r, c);
    lanes(document, c);
    stack_partial(document, *document.report(), c);
    BOOST_TEST_MESSAGE("GUI consumers agree: " << c.count << " figures compared for " << recording);
    return c.count;
}

} // namespace loaderlens::test
