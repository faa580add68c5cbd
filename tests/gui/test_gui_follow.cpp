// SPDX-License-Identifier: MIT
// Following a recording while `loaderlens replay` writes it: the plots grow with each read, the
// rows read bit by bit equal the finished file read whole, a file deleted while followed leaves
// the last data on screen with one message; and runs started from the GUI (replay, attach to a
// running loader from the `ps` picker), stopped with SIGINT as Ctrl+C would, end as finished
// recordings.
#include "../replay_support.hpp"
#include "attach_dialog.hpp"
#include "gui_support.hpp"
#include "main_window.hpp"
#include "qcustomplot_include.hpp"
#include "run_controller.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <functional>
#include <QCoreApplication>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QMimeData>
#include <QTimer>
#include <QUrl>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::gui;

namespace {

// Runs the event loop until `done` or the timeout; returns done().
bool wait_until(const std::function<bool()>& done, int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (!done() && timer.elapsed() < timeout_ms) {
        // Sleeps between looks (a spinning loop would take a core from the recorder under test).
        QEventLoop loop;
        QTimer::singleShot(25, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return done();
}

// Opens a file a recorder is writing, once it is a recording.
void open_followed(MainWindow& window, const std::string& path) {
    BOOST_REQUIRE(wait_until(
        [&] {
            return std::filesystem::exists(path) &&
                   window.document().open_now(QString::fromStdString(path));
        },
        20000));
}

int plotted_points(QCustomPlot* plot) {
    int points = 0;
    for (int i = 0; i < plot->graphCount(); ++i)
        points += plot->graph(i)->data()->size();
    return points;
}

std::size_t stored_points(const RecordingDocument& document) {
    std::size_t n = 0;
    for (const LaneKey& lane : document.store().lanes())
        for (Figure f : LaneStore::figures)
            n += document.store().points(lane, f).size();
    return n;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gui_follow)

BOOST_AUTO_TEST_CASE(plots_grow_while_the_recorder_writes) {
    TempDir dir;
    const std::string out = dir.file("live.db");
    Child writer(long_replay(small_dataset(), out, 6));
    MainWindow window(false);
    window.resize(1600, 1000);
    window.show();
    window.document().set_follow_interval(250);
    open_followed(window, out);
    BOOST_TEST(window.document().state() == RecordingDocument::State::live);
    BOOST_TEST(window.status_text().contains("live"), window.status_text().toStdString());
    window.show_view("workers");
    std::vector<int> plotted;
    QObject::connect(&window.document(), &RecordingDocument::grew, [&] {
        window.refresh_now();
        plotted.push_back(plotted_points(window.view("workers")->plot()));
    });
    BOOST_REQUIRE(wait_until(
        [&] { return window.document().state() != RecordingDocument::State::live; }, 90000));
    BOOST_TEST(window.document().state() == RecordingDocument::State::finished);
    BOOST_TEST(window.status_text().contains("finished"), window.status_text().toStdString());
    // It grew several times, each read drawing more.
    BOOST_TEST_REQUIRE(plotted.size() >= 4u);
    int increases = 0;
    for (std::size_t i = 1; i < plotted.size(); ++i)
        increases += plotted[i] > plotted[i - 1];
    BOOST_TEST(increases >= 3);
    BOOST_TEST(window.document().reads() >= 4);
    // Read bit by bit = read whole.
    RecordingDocument whole;
    BOOST_REQUIRE(whole.open_now(QString::fromStdString(out)));
    BOOST_TEST(stored_points(whole) == stored_points(window.document()));
    for (const LaneKey& lane : whole.store().lanes())
        for (Figure f : LaneStore::figures) {
            const auto& a = whole.store().points(lane, f);
            const auto& b = window.document().store().points(lane, f);
            BOOST_TEST_REQUIRE(a.size() == b.size());
            for (std::size_t i = 0; i < a.size(); ++i)
                BOOST_TEST(a[i].kib == b[i].kib);
        }
    BOOST_TEST(window.document().wait_for_report(60000));
    BOOST_TEST(writer.wait(std::chrono::seconds(30)).has_value());
}

BOOST_AUTO_TEST_CASE(deleted_while_followed_keeps_the_last_data) {
    TempDir dir;
    const std::string out = dir.file("doomed.db");
    Child writer(long_replay(small_dataset(), out, 8));
    MainWindow window(false);
    window.resize(1366, 768);
    window.show();
    window.document().set_follow_interval(200);
    open_followed(window, out);
    int grew = 0;
    QObject::connect(&window.document(), &RecordingDocument::grew, [&] { ++grew; });
    BOOST_REQUIRE(wait_until([&] { return grew >= 2; }, 30000));
    const std::size_t before = stored_points(window.document());
    std::filesystem::remove(out);
    BOOST_REQUIRE(wait_until(
        [&] { return window.document().state() == RecordingDocument::State::deleted; }, 5000));
    BOOST_TEST(window.banner_text().contains("deleted"), window.banner_text().toStdString());
    BOOST_TEST(stored_points(window.document()) >= before);
    BOOST_TEST(before > 0u);
    for (DashboardView* view : window.views()) { // every view still draws, from what was read
        window.show_view(view->name());
        window.refresh_now();
    }
    BOOST_TEST(window.view("workers")->lane_count() == 2);
}

BOOST_AUTO_TEST_CASE(replay_started_from_the_gui_stops_on_sigint) {
    TempDir dir;
    const std::string out = dir.file("from-gui.db");
    MainWindow window(false);
    window.document().set_follow_interval(200);
    const QStringList args{"replay",      QString::fromStdString(small_dataset()),
                           "-q",          "--force",
                           "-o",          QString::fromStdString(out),
                           "--workers",   "2",
                           "--epochs",    "200",
                           "--step-time", "25ms"};
    BOOST_REQUIRE_MESSAGE(window.launch(args, QString::fromStdString(out)),
                          window.banner_text().toStdString());
    BOOST_REQUIRE(wait_until(
        [&] { return window.document().state() == RecordingDocument::State::live; }, 30000));
    BOOST_REQUIRE(wait_until([&] { return window.document().reads() >= 2; }, 30000));
    window.stop_run();
    BOOST_REQUIRE(wait_until([&] { return !window.run_controller()->running(); }, 30000));
    BOOST_REQUIRE(wait_until(
        [&] { return window.document().state() != RecordingDocument::State::live; }, 10000));
    // Stopped as Ctrl+C stops it: a finished recording that says which signal came.
    const RecordingEnd end = Recording(out).end();
    BOOST_TEST((end.state == RecordingEnd::State::finished));
    BOOST_TEST(end.signal.value_or("") == "Interrupt");
    BOOST_TEST((window.document().state() == RecordingDocument::State::interrupted ||
                window.document().state() == RecordingDocument::State::finished));
}

// File ▸ Record's command form: `record -- CMD` run by the window, its recording followed to
// its end; and a recording dropped on the window opens.
BOOST_AUTO_TEST_CASE(record_a_command_and_drop_a_file) {
    TempDir dir;
    const std::string out = dir.file("command.db");
    MainWindow window(false);
    window.document().set_follow_interval(200);
    const QStringList args{
        "record", "--force", "-o", QString::fromStdString(out),
        "--",     "python3", "-c", "import time; b = bytearray(16 << 20); time.sleep(2)"};
    BOOST_REQUIRE(window.launch(args, QString::fromStdString(out)));
    BOOST_REQUIRE(wait_until([&] { return !window.run_controller()->running(); }, 30000));
    BOOST_REQUIRE(wait_until(
        [&] {
            return window.document().has_data() &&
                   window.document().state() == RecordingDocument::State::finished;
        },
        10000));
    BOOST_TEST(window.banner_text().isEmpty(), window.banner_text().toStdString());
    BOOST_TEST(window.document().data().meta.at("command").find("python3") != std::string::npos);
    // The python process held its 16 MiB: the main lane's RSS says so.
    std::int64_t peak = window.document().store().peak(LaneKey::main_lane(), Figure::rss);
    BOOST_TEST(peak >= 16 * 1024, peak);

    MainWindow other(false);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(out))});
    // As a drag does: entered (the window accepts files), then dropped.
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&other, &enter);
    BOOST_TEST(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(&other, &drop);
    wait_until([&] { return other.document().has_data(); }, 10000);
    BOOST_TEST_REQUIRE(other.document().has_data(),
                       "state " << other.document().state() << ", error "
                                << other.document().error().toStdString() << ", status "
                                << other.status_text().toStdString());
    BOOST_TEST(other.document().path().toStdString() == out);
}

// The attach picker lists a running loader (from `loaderlens ps`: a python main with forked
// python children, as a DataLoader's); recording it with --pid follows its tree until it exits.
BOOST_AUTO_TEST_CASE(attach_to_a_running_loader) {
    TempDir dir;
    Child loader({"python3", "-c",
                  "import os, time\n"
                  "for worker in range(2):\n"
                  "    if os.fork() == 0:\n"
                  "        data = bytearray(8 << 20)\n"
                  "        time.sleep(120)\n"
                  "        os._exit(0)\n"
                  "time.sleep(120)\n"});
    AttachDialog dialog;
    // A loader's workers are found once they run: ask again until it is listed as a main.
    bool listed = false;
    wait_until(
        [&] {
            if (dialog.listing()) return false;
            for (const ListedProcess& p : dialog.model().processes())
                if (p.pid == loader.pid() && p.loader_role == "main" && p.workers == 2)
                    listed = true;
            if (!listed) dialog.list();
            return listed;
        },
        30000);
    BOOST_TEST_REQUIRE(listed);
    BOOST_TEST_REQUIRE(dialog.select_pid(loader.pid()));
    const std::string out = dir.file("attached.db");
    dialog.set_output(QString::fromStdString(out));
    BOOST_TEST(dialog.arguments().contains("--pid"));
    MainWindow window(false);
    window.document().set_follow_interval(200);
    BOOST_REQUIRE(window.launch(dialog.arguments(), dialog.output()));
    BOOST_REQUIRE(wait_until([&] { return window.document().reads() >= 2; }, 30000));
    ::kill(-loader.pid(), SIGTERM); // its process group: main and workers
    BOOST_REQUIRE(wait_until([&] { return !window.run_controller()->running(); }, 30000));
    BOOST_REQUIRE(wait_until(
        [&] { return window.document().state() != RecordingDocument::State::live; }, 10000));
    BOOST_TEST(window.document().state() == RecordingDocument::State::finished);
    BOOST_TEST(Recording(out).processes().size() >= 3u); // main and its 2 workers
}

BOOST_AUTO_TEST_SUITE_END()
