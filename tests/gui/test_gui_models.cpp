// SPDX-License-Identifier: MIT
// The dashboard's models on real replays: every item model under QAbstractItemModelTester, the
// per-lane series against core's series() (the reading engine's own sums), the residency grid
// against the kernel's page cache read by the test (mincore), decimation that keeps every peak.
#include "../replay_support.hpp"
#include "../residency_support.hpp"
#include "display_text.hpp"
#include "envelope.hpp"
#include "file_table_model.hpp"
#include "finding_list_model.hpp"
#include "gui_support.hpp"
#include "process_picker_model.hpp"
#include "process_table_model.hpp"
#include "recording_document.hpp"
#include "residency_grid.hpp"
#include "scheduler_table_model.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::gui;

namespace {

// QAbstractItemModelTester reports through qWarning in Warning mode: every such line fails.
QStringList tester_failures;
void collect(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (type != QtDebugMsg && type != QtInfoMsg && message.contains("FAIL"))
        tester_failures << message;
}

struct TesterWatch {
    QtMessageHandler previous = qInstallMessageHandler(collect);
    TesterWatch() { tester_failures.clear(); }
    ~TesterWatch() { qInstallMessageHandler(previous); }
    void check() const { BOOST_TEST(tester_failures.join('\n').toStdString() == ""); }
};

void open(RecordingDocument& document, const std::string& path) {
    BOOST_REQUIRE_MESSAGE(document.open_now(QString::fromStdString(path)),
                          document.error().toStdString());
    BOOST_REQUIRE(document.wait_for_report(120000));
}

} // namespace

BOOST_AUTO_TEST_SUITE(gui_models)

// Each lane's sums equal series() for the same selection, figure by figure, tick by tick.
BOOST_AUTO_TEST_CASE(lane_series_equal_the_reading_engines) {
    RecordingDocument document;
    open(document, scenario_recording(1));
    const RecordingData data = Recording(scenario_recording(1)).read_all();
    int compared = 0;
    for (const LaneKey& lane : document.store().lanes()) {
        if (lane.kind == LaneKey::Kind::helpers) continue; // no single selector for them
        const Selector selector = lane.kind == LaneKey::Kind::main
                                      ? Selector::of_role(Role::main)
                                      : Selector::worker_slot(lane.slot);
        for (Figure figure : LaneStore::figures) {
            SeriesQuery query;
            query.figure = figure;
            query.selector = selector;
            std::vector<LanePoint> expected;
            for (const SeriesPoint& p : series(data, query).points)
                if (p.value) expected.push_back({p.t_ms, *p.value});
            const auto& got = document.store().points(lane, figure);
            BOOST_TEST_REQUIRE(got.size() == expected.size(), to_string(figure));
            for (std::size_t i = 0; i < got.size(); ++i) {
                BOOST_TEST(got[i].t_ms == expected[i].t_ms);
                BOOST_TEST(got[i].kib == expected[i].kib);
            }
            compared += static_cast<int>(got.size());
        }
    }
    // The stack's ticks: each lane's PSS there, as the lane's own series has it (0: no point).
    for (const LaneKey& lane : document.store().lanes()) {
        const int index = document.store().lane_index(lane);
        std::map<std::int64_t, std::int64_t> pss;
        for (const LanePoint& p : document.store().points(lane, Figure::pss))
            pss[p.t_ms] = p.kib;
        BOOST_TEST((index >= 0) == !pss.empty());
        if (index < 0) continue;
        std::size_t seen = 0;
        for (const StackTick& tick : document.store().stack()) {
            const auto i = static_cast<std::size_t>(index);
            const std::int64_t value = i < tick.pss_by_lane.size() ? tick.pss_by_lane[i] : 0;
            auto it = pss.find(tick.t_ms);
            BOOST_TEST(value == (it == pss.end() ? 0 : it->second));
            seen += it != pss.end();
        }
        BOOST_TEST(seen == pss.size()); // every tick of the lane is a tick of the stack
    }
    BOOST_TEST(document.store().lanes().size() >= 5u); // 4 slots and main
    BOOST_TEST(compared > 200);
}

BOOST_AUTO_TEST_CASE(report_models_pass_the_model_tester) {
    RecordingDocument document;
    open(document, scenario_recording(4));
    const ReportData& report = *document.report();
    TesterWatch watch;

    ProcessTableModel processes;
    QAbstractItemModelTester process_tester(
        &processes, QAbstractItemModelTester::FailureReportingMode::Warning);
    processes.set_processes(report.processes, report.duration_ms);
    QSortFilterProxyModel sorted;
    sorted.setSourceModel(&processes);
    sorted.setSortRole(ProcessTableModel::SortRole);
    QAbstractItemModelTester sorted_tester(&sorted,
                                           QAbstractItemModelTester::FailureReportingMode::Warning);
    sorted.sort(ProcessTableModel::peak_rss, Qt::DescendingOrder);
    sorted.setFilterKeyColumn(ProcessTableModel::role_column);
    sorted.setFilterFixedString("worker");
    // Against the recording read by core: the same processes, the workers with their slots.
    const auto recorded = Recording(scenario_recording(4)).processes();
    BOOST_TEST(processes.rowCount() == static_cast<int>(recorded.size()));
    int workers = 0;
    for (const ProcessInfo& p : recorded) {
        const int row = processes.row_of(p.id);
        BOOST_TEST_REQUIRE(row >= 0);
        BOOST_TEST(processes.index(row, ProcessTableModel::pid).data().toLongLong() == p.key.pid);
        if (p.role == Role::worker) {
            ++workers;
            BOOST_TEST(processes.index(row, ProcessTableModel::slot).data().toInt() == p.slot);
        }
    }
    BOOST_TEST(sorted.rowCount() == workers); // the role column says "worker" for each
    // Sorted by number, not by text ("9.0 MiB" after "10.0 MiB" would be a text sort).
    for (int r = 1; r < sorted.rowCount(); ++r)
        BOOST_TEST(sorted.index(r - 1, ProcessTableModel::peak_rss)
                       .data(ProcessTableModel::SortRole)
                       .toLongLong() >= sorted.index(r, ProcessTableModel::peak_rss)
                                            .data(ProcessTableModel::SortRole)
                                            .toLongLong());

    FindingListModel findings;
    QAbstractItemModelTester finding_tester(
        &findings, QAbstractItemModelTester::FailureReportingMode::Warning);
    findings.set_findings(report.diagnosis.findings);
    BOOST_TEST(findings.rowCount() == static_cast<int>(report.diagnosis.findings.size()));
    QStringList kinds;
    for (int r = 0; r < findings.rowCount(); ++r)
        kinds << findings.index(r, 0).data(FindingListModel::KindRole).toString();
    BOOST_TEST(kinds.contains("file_growth_persistent_workers"), kinds.join(',').toStdString());

    SchedulerTableModel schedulers;
    QAbstractItemModelTester scheduler_tester(
        &schedulers, QAbstractItemModelTester::FailureReportingMode::Warning);
    std::vector<ProcessInfo> infos;
    for (const auto& p : report.processes)
        infos.push_back(p.info);
    schedulers.set_views(report.diagnosis.schedulers, infos);
    BOOST_TEST(schedulers.rowCount() == 6);
    const SchedulerView* linux_view = report.diagnosis.view("slurm_linux");
    BOOST_TEST_REQUIRE(linux_view);
    BOOST_TEST(schedulers.index(0, SchedulerTableModel::peak).data().toString() ==
               kib_text(linux_view->peak));
    // Σ RSS's largest holder at its peak: a process of the recording, named with its figure.
    BOOST_TEST_REQUIRE(linux_view->peak_process_id.has_value());
    const QString holder = schedulers.index(0, SchedulerTableModel::holder).data().toString();
    BOOST_TEST(holder.endsWith(": " + kib_text(linux_view->peak_process_kb)), holder.toStdString());

    FileTableModel files;
    QAbstractItemModelTester file_tester(&files,
                                         QAbstractItemModelTester::FailureReportingMode::Warning);
    files.set_files(report.files);
    BOOST_TEST(files.rowCount() == static_cast<int>(report.files.size()));
    BOOST_TEST(files.row_of_path(QString::fromStdString(report.files.front().object.path)) >= 0);
    BOOST_TEST(files.index(0, FileTableModel::path).data().toString().endsWith("data.mdb"));
    // A reset with other contents, under the testers.
    files.set_files({});
    processes.set_processes({}, 0);
    findings.set_findings({});
    watch.check();
}

// The attach picker's list comes from `loaderlens ps --json`: this test process is in it.
BOOST_AUTO_TEST_CASE(process_picker_reads_ps_json) {
    const RunResult ps = run({cli_path(), "ps", "--json", "--all", "--interval", "0"});
    BOOST_TEST_REQUIRE(ps.exit_code == 0, ps.err);
    TesterWatch watch;
    ProcessPickerModel picker;
    QAbstractItemModelTester tester(&picker,
                                    QAbstractItemModelTester::FailureReportingMode::Warning);
    BOOST_TEST_REQUIRE(picker.set_ps_json(QByteArray::fromStdString(ps.out)),
                       picker.error().toStdString());
    bool found = false;
    for (const ListedProcess& p : picker.processes())
        if (p.pid == getpid()) found = p.command.contains("loaderlens_gui_tests");
    BOOST_TEST(found);
    BOOST_TEST(!picker.set_ps_json("{not json"));
    BOOST_TEST(picker.error().contains("no process list"));
    BOOST_TEST(picker.rowCount() > 1); // the good list kept
    watch.check();
}

// The grid's last column: the data file's page cache as the kernel reports it to the test.
BOOST_AUTO_TEST_CASE(residency_grid_matches_mincore) {
    TempDir dir;
    const std::string data = dir.file("cold.npy");
    mkdata({"npy", data, "--count", "1024", "--shape", "3x32x32", "--dtype", "f4"}); // 12 MiB
    residency::make_cold(data);
    replay(dir.file("run.db"), {data, "--workers", "2", "--epochs", "1", "--step-time", "10ms",
                                "--interval", "residency=100ms"});
    const std::int64_t cached = residency::cached_pages(data); // mincore, by the test
    RecordingDocument document;
    open(document, dir.file("run.db"));
    std::int64_t file_id = 0;
    for (const auto& f : document.data().residency_files)
        if (f.path == std::filesystem::canonical(data).string()) file_id = f.id;
    BOOST_TEST_REQUIRE(file_id != 0);
    const FileResidencyGrids grids = residency_grids(document.data(), file_id, document.processes(),
                                                     document.duration_ms(), 400, true);
    const ResidencyGrid& g = grids.cache;
    BOOST_TEST_REQUIRE(g.columns > 1);
    double pages = 0;
    for (int r = 0; r < g.rows; ++r)
        pages += g.at(g.columns - 1, r) * grids.file.layout.pages_in(r);
    BOOST_TEST(std::abs(pages - static_cast<double>(cached)) <= 0.02 * cached + 2,
               "grid " << pages << " pages, mincore " << cached);
    BOOST_TEST(grids.slot_grids.size() == 2u);
    BOOST_TEST(!grids.read_progress.empty());
    // Before the first residency sample a cell is not sampled: NaN, never 0.
    BOOST_TEST(std::isnan(g.at(0, 0)) == (grids.file.first_ms > g.to_s * 1000 / g.columns));
}

// Two points per pixel column at most, and the highest and lowest values kept.
BOOST_AUTO_TEST_CASE(envelope_keeps_peaks_and_gaps) {
    std::vector<LanePoint> points;
    for (int t = 0; t < 100000; t += 100)
        points.push_back({t, t == 55500 ? 9000 : 1000 + t % 7});
    const auto drawn = envelope(points, 0, 100, 200, {}, 1.0);
    BOOST_TEST(drawn.size() <= 400u);
    double top = 0;
    for (const auto& p : drawn)
        top = std::max(top, p.value);
    BOOST_TEST(top == 9000);
    const auto broken = envelope(points, 0, 100, 200, {{40000, 40050}}, 1.0);
    int breaks = 0;
    for (const auto& p : broken)
        breaks += std::isnan(p.value) ? 1 : 0;
    BOOST_TEST(breaks == 1);
}

BOOST_AUTO_TEST_SUITE_END()
