// SPDX-License-Identifier: MIT
// The window on real replays of scenarios 1, 4 and 7: every view drawn and saved as a picture
// (gui-screenshots/ in the build's tests/ directory, for a person to look at), with checks that
// can fail: the plots hold coloured lines, the Workers view has one lane per worker slot, each
// lane has something drawn, the verdict names the scenario's finding. Then --screenshot and the
// bad inputs, and the exports.
#include "../replay_support.hpp"
#include "file_table_model.hpp"
#include "gui_support.hpp"
#include "main_window.hpp"
#include "overview_view.hpp"
#include "plot_frame.hpp"
#include "qcustomplot_include.hpp"
#include "view_export.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <QFile>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::gui;

namespace {

std::string gui_path() {
    return LOADERLENS_GUI_PATH;
}

// Opens a scenario, draws every view at 1600x1000, saves each, checks the pictures.
void check_scenario(int scenario, const QString& expected_finding) {
    const std::string path = scenario_recording(scenario);
    MainWindow window(false);
    BOOST_REQUIRE(window.open_now(QString::fromStdString(path)));
    BOOST_REQUIRE(window.document().wait_for_report(120000));
    window.resize(1600, 1000);
    window.show();
    const int slot_count = worker_slots_of(path);
    BOOST_TEST_REQUIRE(slot_count > 0);
    for (DashboardView* view : window.views()) {
        window.show_view(view->name());
        window.refresh_now();
        const QImage picture = window.grab().toImage();
        const std::string file = screenshot_dir() + "/scenario" + std::to_string(scenario) + "-" +
                                 view->name().toStdString() + ".png";
        BOOST_TEST(picture.save(QString::fromStdString(file)));
        BOOST_TEST_CONTEXT("scenario " << scenario << ", view " << view->name().toStdString()) {
            if (QCustomPlot* plot = view->plot()) {
                plot->replot();
                const QImage drawn = plot->toPixmap().toImage();
                // The plot area holds lines: at least 0.2% of its pixels are coloured.
                BOOST_TEST(coloured_pixels(drawn, drawn.rect()) >
                           drawn.width() * drawn.height() / 500);
            }
        }
    }
    // Workers: one lane per slot, each with coloured pixels of its own.
    auto* workers = window.view("workers");
    BOOST_TEST(workers->lane_count() == slot_count);
    QCustomPlot* plot = workers->plot();
    const QImage drawn = plot->toPixmap().toImage();
    int lanes_drawn = 0;
    for (QCPAxisRect* rect : plot->axisRects())
        lanes_drawn += coloured_pixels(drawn, rect->rect()) > 50 ? 1 : 0;
    BOOST_TEST(lanes_drawn == plot->axisRects().size()); // the stack, each slot, main
    // The verdict names the scenario's finding.
    auto* overview = static_cast<OverviewView*>(window.view("overview"));
    QStringList kinds;
    for (int r = 0; r < overview->findings().rowCount(); ++r)
        kinds << overview->findings().index(r, 0).data(FindingListModel::KindRole).toString();
    BOOST_TEST(kinds.contains(expected_finding), kinds.join(',').toStdString());
    BOOST_TEST(window.banner_text().isEmpty(), window.banner_text().toStdString());
    BOOST_TEST(window.status_text().contains("finished"), window.status_text().toStdString());
}

} // namespace

BOOST_AUTO_TEST_SUITE(gui_window)

BOOST_AUTO_TEST_CASE(scenario_1_shared_mmap) {
    check_scenario(1, "shared_file_cache");
}
BOOST_AUTO_TEST_CASE(scenario_4_lmdb_persistent) {
    check_scenario(4, "file_growth_persistent_workers");
}
BOOST_AUTO_TEST_CASE(scenario_7_copy_on_read) {
    check_scenario(7, "copy_on_read");
}

// One sample of a file (a recording shorter than the maps tier's interval) draws no line: each
// sample of a sparse series is a dot, so the plot is not left empty; a dense one stays a line.
BOOST_AUTO_TEST_CASE(a_single_sample_is_drawn_as_a_dot) {
    QCustomPlot plot;
    plot.resize(400, 300);
    plot.xAxis->setRange(0, 10);
    plot.yAxis->setRange(0, 10);
    QCPGraph* graph = plot.addGraph();
    graph->setPen(QPen(PlotFrame::color(0), 2));
    graph->data()->set({QCPGraphData(5, 5)}, true);
    plot.replot(); // lays the axis rect out
    const int columns = plot.axisRect()->width();
    BOOST_TEST_REQUIRE(columns > 100);
    auto drawn = [&] {
        plot.replot();
        const QImage image = plot.toPixmap().toImage();
        return coloured_pixels(image, image.rect());
    };
    BOOST_TEST(drawn() == 0); // what QCustomPlot draws of one point without a scatter style
    PlotFrame::mark_samples(graph, 1, columns);
    BOOST_TEST(drawn() > 15);
    PlotFrame::mark_samples(graph, static_cast<std::size_t>(columns), columns);
    BOOST_TEST(graph->scatterStyle().shape() == QCPScatterStyle::ssNone);
}

// A finding clicked in the Overview selects its time range, slot and file everywhere.
BOOST_AUTO_TEST_CASE(finding_click_selects_its_range_and_slot) {
    MainWindow window(false);
    BOOST_REQUIRE(window.open_now(QString::fromStdString(scenario_recording(4))));
    BOOST_REQUIRE(window.document().wait_for_report(120000));
    auto* overview = static_cast<OverviewView*>(window.view("overview"));
    window.refresh_now();
    int row = -1;
    for (int r = 0; r < overview->findings().rowCount(); ++r)
        if (overview->findings().finding(r)->kind == "file_growth_persistent_workers") row = r;
    BOOST_TEST_REQUIRE(row >= 0);
    const Finding& f = *overview->findings().finding(row);
    overview->pick_finding(row);
    BOOST_TEST(window.selection().file().toStdString() == f.file);
    BOOST_TEST(window.selection().slot() == f.slot);
    if (f.to_ms > f.from_ms) {
        BOOST_TEST(window.time_window().from_s() <= f.from_ms / 1000.0);
        BOOST_TEST(window.time_window().to_s() >= f.to_ms / 1000.0);
        BOOST_TEST(window.time_window().to_s() - window.time_window().from_s() <
                   window.time_window().duration_s() + 1e-9);
    }
}

// loaderlens-gui --screenshot, run as a user would: one picture per view, no display needed.
BOOST_AUTO_TEST_CASE(screenshot_command) {
    TempDir dir;
    const RunResult r = run({gui_path(), "--screenshot", dir.file("shot.png"), "--view", "all",
                             "--size", "1366x768", scenario_recording(1)},
                            std::chrono::seconds(120));
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    for (const char* view :
         {"overview", "workers", "schedulers", "files", "residency", "processes"}) {
        QImage image(QString::fromStdString(dir.file(std::string("shot-") + view + ".png")));
        BOOST_TEST(image.width() == 1366, view);
        BOOST_TEST(image.height() == 768, view);
    }
}

// Bad input: one line on stderr naming it, exit 2, no picture, never a crash.
BOOST_AUTO_TEST_CASE(screenshot_bad_inputs) {
    TempDir dir;
    const std::string good = scenario_recording(1);
    const std::string text = dir.file("notes.txt");
    std::ofstream(text) << "not a recording\n";
    const std::string truncated = dir.file("truncated.db");
    std::filesystem::copy_file(good, truncated);
    std::filesystem::resize_file(truncated, std::filesystem::file_size(good) / 2);
    const std::string newer = dir.file("newer.db");
    std::filesystem::copy_file(good, newer);
    BOOST_REQUIRE(run({"python3", "-c",
                       "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                       "c.execute('PRAGMA user_version=999'); c.commit()",
                       newer})
                      .exit_code == 0);
    struct Case {
        std::vector<std::string> args;
        std::string names;
    };
    const std::vector<Case> cases{
        {{text}, text},
        {{truncated}, truncated},
        {{newer}, "newer than this loaderlens"},
        {{dir.file("missing.db")}, "missing.db"},
        {{"--view", "lanes", good}, "--view lanes"},
        {{"--size", "10x10", good}, "--size 10x10"},
        {{}, "needs a RECORDING"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> argv{gui_path(), "--screenshot", dir.file("out.png")};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        const RunResult r = run(argv, std::chrono::seconds(60));
        BOOST_TEST_CONTEXT(c.names) {
            BOOST_TEST(r.exit_code == 2);
            const auto lines = lines_of(r.err);
            int ours = 0;
            for (const auto& line : lines)
                ours += line.rfind("loaderlens-gui: ", 0) == 0 ? 1 : 0;
            BOOST_TEST(ours == 1, r.err);
            BOOST_TEST(r.err.find(c.names) != std::string::npos, r.err);
            BOOST_TEST(!std::filesystem::exists(dir.file("out.png")));
        }
    }
    // In the window: the message in its banner, the window usable, a good file opens after.
    MainWindow window(false);
    BOOST_TEST(!window.open_now(QString::fromStdString(truncated)));
    BOOST_TEST(window.banner_text().contains(QString::fromStdString(truncated)));
    window.refresh_now();
    BOOST_TEST(window.open_now(QString::fromStdString(good)));
}

BOOST_AUTO_TEST_CASE(exports_png_pdf_svg) {
    TempDir dir;
    MainWindow window(false);
    BOOST_REQUIRE(window.open_now(QString::fromStdString(scenario_recording(1))));
    BOOST_REQUIRE(window.document().wait_for_report(120000));
    window.resize(1600, 1000);
    window.show();
    const std::map<std::string, QByteArray> magic{
        {"png", "\x89PNG"}, {"pdf", "%PDF"}, {"svg", "<?xml"}};
    for (const char* name : {"workers", "overview"}) {
        window.show_view(name);
        window.refresh_now();
        for (const auto& [suffix, start] : magic) {
            const QString path = QString::fromStdString(dir.file(std::string(name) + "." + suffix));
            QString error;
            BOOST_TEST(export_view_to(window.view(name), path, &error), error.toStdString());
            QFile file(path);
            BOOST_TEST_REQUIRE(file.open(QIODevice::ReadOnly));
            BOOST_TEST(file.read(start.size()) == start, name << "." << suffix);
            BOOST_TEST(file.size() > 2000);
        }
    }
    QString error;
    BOOST_TEST(
        !export_view_to(window.view("workers"), QString::fromStdString(dir.file("x.bmp")), &error));
    BOOST_TEST(error.contains("png, pdf or svg"));
}

// A merged recording (loaderlens merge of scenarios 1 and 7, as two nodes): the Workers view has a
// lane per node and slot, never one for both nodes' slot 0.
BOOST_AUTO_TEST_CASE(merged_recording_has_a_lane_per_part_and_slot) {
    TempDir dir;
    const std::string merged = dir.file("merged.db");
    const RunResult r =
        run({cli_path(), "merge", scenario_recording(1), scenario_recording(7), "-o", merged});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    MainWindow window(false);
    BOOST_REQUIRE(window.open_now(QString::fromStdString(merged)));
    BOOST_REQUIRE(window.document().wait_for_report(120000));
    window.resize(1600, 1000);
    window.show();
    window.show_view("workers");
    window.refresh_now();
    BOOST_TEST(window.view("workers")->lane_count() ==
               worker_slots_of(scenario_recording(1)) + worker_slots_of(scenario_recording(7)));
    BOOST_TEST(window.banner_text().isEmpty(), window.banner_text().toStdString());
    BOOST_TEST(window.grab().toImage().save(
        QString::fromStdString(screenshot_dir() + "/merged-workers.png")));
}

BOOST_AUTO_TEST_SUITE_END()
