// SPDX-License-Identifier: MIT
// GUI bench (issue 14's targets, docs/gui.md): on a 1 h x 32-worker recording made by the real
// writer (synthetic_recording.hpp),
//  - first paint: from open() to the Workers view drawn at 1600x900 (offscreen), against reading
//    the rows alone (Recording::read_all) in the same round: target <= 2 s;
//  - Workers replot at 1600x900, unchanged and after a zoom (the series decimated again), against
//    a plain QCustomPlot that draws every tick of the same 32 lanes: target <= 20 ms;
//  - following a recording being written at 2 Hz: the GUI process's CPU share while a writer adds
//    one simulated second per second to a 1 h recording, against `loaderlens tail` following the
//    same file at the same rate: target <= 5% of one core.
// Exit 3 when a target is missed, 2 on bad arguments, 1 when a measurement could not run.
#include "main_window.hpp"
#include "qcustomplot_include.hpp"
#include "rounds.hpp"
#include "synthetic_recording.hpp"
#include "targets.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <random>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::bench;
using namespace loaderlens::gui;

namespace {

struct Options {
    std::int64_t length_s = 3600, refork_every_s = 900;
    int workers = 32, rounds = 3, replots = 30, follow_s = 30;
};

double cpu_seconds(const rusage& usage) {
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double cpu_seconds_self() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return cpu_seconds(usage);
}

// The Workers view at 1600x900 (offscreen) on `path`, its report built and the view drawn.
std::unique_ptr<MainWindow> workers_window(const std::string& path) {
    auto window = std::make_unique<MainWindow>(false);
    window->resize(1600, 900);
    window->show_view("workers");
    window->show();
    if (!window->open_now(QString::fromStdString(path))) throw std::runtime_error("cannot open");
    window->document().wait_for_report(120000);
    window->refresh_now();
    return window;
}

// Runs the event loop (sleeping while there is nothing to do: a spinning loop would be measured
// as the GUI's own cost) until `done` or the timeout.
void pump_until(const std::function<bool()>& done, int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (!done() && timer.elapsed() < timeout_ms) {
        QEventLoop loop;
        QTimer::singleShot(5, &loop, &QEventLoop::quit);
        loop.exec();
    }
    if (!done()) throw std::runtime_error("timed out");
}

void run_events_for(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

// --live-writer PATH PREFILL_S FOLLOW_S: the writer of the follow measure, a process of its own
// (its cmdline says loaderlens, so a reader takes it for a live recorder).
int live_writer(const std::string& path, std::int64_t prefill_s, int follow_s, int workers) {
    RecordingShape shape;
    shape.workers = workers;
    shape.refork_every_s = 900;
    SyntheticRecording recording(path, shape);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    recording.set_meta("host", host);
    recording.set_meta("writer_pid", std::to_string(::getpid()));
    recording.write_seconds(prefill_s);
    std::printf("ready\n");
    std::fflush(stdout);
    const auto start = std::chrono::steady_clock::now();
    for (int s = 1; s <= follow_s; ++s) {
        std::this_thread::sleep_until(start + std::chrono::seconds(s));
        recording.write_seconds(1);
    }
    recording.finish();
    return 0;
}

struct FirstPaint {
    Stats paint, report, read;
};

FirstPaint measure_first_paint(const std::string& path, int rounds) {
    FirstPaint out;
    const Measure open_and_paint = [&](Stats& stats) {
        MainWindow window(false);
        window.resize(1600, 900);
        window.show_view("workers");
        window.show();
        QCoreApplication::processEvents();
        QElapsedTimer timer;
        timer.start();
        window.open(QString::fromStdString(path));
        QCustomPlot* plot = window.view("workers")->plot();
        pump_until([&] { return window.document().has_data() && plot->graphCount() > 0; }, 60000);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        stats.us.push_back(static_cast<double>(timer.nsecsElapsed()) / 1000);
        pump_until([&] { return window.document().report() != nullptr; }, 120000);
        out.report.us.push_back(static_cast<double>(timer.nsecsElapsed()) / 1000);
    };
    const Measure read_rows = timed([&] { return !Recording(path).read_all().fast.empty(); });
    auto stats = interleaved({open_and_paint, read_rows}, rounds);
    out.paint = stats[0];
    out.read = stats[1];
    return out;
}

struct Replot {
    Stats unchanged, zoomed, naive;
};

Replot measure_replot(const std::string& path, int replots) {
    Replot out;
    const auto owned = workers_window(path);
    MainWindow& window = *owned;
    QCustomPlot* plot = window.view("workers")->plot();
    // The plot's own size: its lanes are taller than the window and scroll.
    std::printf("  Workers plot: %d x %d px, %d axis rects, %d graphs\n", plot->width(),
                plot->height(), plot->axisRectCount(), plot->graphCount());
    std::mt19937 random(7);
    const double duration = window.time_window().duration_s();
    for (int i = 0; i < replots + 1; ++i) {
        QElapsedTimer timer;
        timer.start();
        plot->replot(QCustomPlot::rpImmediateRefresh);
        if (i > 0) out.unchanged.us.push_back(static_cast<double>(timer.nsecsElapsed()) / 1000);
        // A zoom: the window moves, the lanes are decimated again to the width, then drawn.
        const double span = duration * std::uniform_real_distribution<>(0.05, 1.0)(random);
        const double from = std::uniform_real_distribution<>(0, duration - span)(random);
        timer.restart();
        window.time_window().set_range(from, from + span);
        // What the window does next: the scheduled redraw (decimation again), then its replot.
        QCoreApplication::processEvents();
        QCoreApplication::processEvents();
        if (i > 0) out.zoomed.us.push_back(static_cast<double>(timer.nsecsElapsed()) / 1000);
    }
    // Baseline: every fast tick of each slot's RSS drawn as it is (QCustomPlot's adaptive
    // sampling on), in one plot of the same size.
    QCustomPlot naive;
    naive.resize(1600, 900);
    const auto& store = window.document().store();
    for (const LaneKey& lane : store.lanes()) {
        QVector<QCPGraphData> points;
        for (const LanePoint& p : store.points(lane, Figure::rss))
            points.push_back(QCPGraphData(p.t_ms / 1000.0, p.kib / 1024.0));
        naive.addGraph()->data()->set(points, true);
    }
    naive.rescaleAxes();
    naive.show();
    for (int i = 0; i < replots + 1; ++i) {
        QElapsedTimer timer;
        timer.start();
        naive.replot(QCustomPlot::rpImmediateRefresh);
        if (i > 0) out.naive.us.push_back(static_cast<double>(timer.nsecsElapsed()) / 1000);
    }
    return out;
}

struct Follow {
    double gui_share = 0, tail_share = 0;
    int reads = 0;
    std::int64_t last_report_ms = 0;
};

Follow measure_follow(const std::string& self, const std::string& cli, Scratch& scratch,
                      const Options& o) {
    const std::string path = scratch.path_for("live.db");
    int ready[2];
    if (::pipe(ready) != 0) throw std::runtime_error("pipe");
    const pid_t writer = ::fork();
    if (writer == 0) {
        ::dup2(ready[1], STDOUT_FILENO);
        ::execl(self.c_str(), self.c_str(), "--live-writer", path.c_str(),
                std::to_string(o.length_s).c_str(), std::to_string(o.follow_s).c_str(),
                std::to_string(o.workers).c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    guard_process(writer);
    ::close(ready[1]);
    char line[16] = {};
    if (::read(ready[0], line, sizeof line - 1) <= 0) throw std::runtime_error("writer failed");
    ::close(ready[0]);

    const auto owned = workers_window(path);
    MainWindow& window = *owned;
    if (window.document().state() != RecordingDocument::State::live)
        throw std::runtime_error("the recording is not live: " +
                                 window.document().state_text().toStdString());
    // The CLI's follower on the same file at the same rate, a process of its own.
    const pid_t tail = ::fork();
    if (tail == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::execl(cli.c_str(), cli.c_str(), "tail", "--interval", "500ms", path.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    guard_process(tail);
    const int reads_before = window.document().reads();
    const double cpu_before = cpu_seconds_self();
    QElapsedTimer wall;
    wall.start();
    const int measured_ms = (o.follow_s - 4) * 1000;
    run_events_for(measured_ms);
    Follow out;
    out.gui_share =
        (cpu_seconds_self() - cpu_before) / (static_cast<double>(wall.elapsed()) / 1000);
    out.reads = window.document().reads() - reads_before;
    out.last_report_ms = window.document().last_report_cost_ms();
    ::kill(tail, SIGINT);
    int status = 0;
    rusage usage{};
    ::wait4(tail, &status, 0, &usage);
    unguard_process(tail);
    out.tail_share = cpu_seconds(usage) / (static_cast<double>(wall.elapsed()) / 1000);
    ::waitpid(writer, &status, 0);
    unguard_process(writer);
    return out;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 6 && std::strcmp(argv[1], "--live-writer") == 0)
        return live_writer(argv[2], std::atoll(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
    init_cleanup();
    Options o;
    std::string cli = "loaderlens";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--quick") { // a smoke run
            o.length_s = 600;
            o.rounds = 1;
            o.replots = 5;
            o.follow_s = 12;
        } else if (arg == "--length" && i + 1 < argc) { // seconds of the recording
            o.length_s = std::max(60LL, std::atoll(argv[++i]));
        } else if (arg == "--cli" && i + 1 < argc) {
            cli = argv[++i];
        } else {
            std::fprintf(stderr,
                         "gui bench: unknown argument %s (--quick, --length S, --cli PATH)\n",
                         argv[i]);
            return 2;
        }
    }
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    int qt_argc = 1;
    QApplication app(qt_argc, argv);
    try {
        Scratch scratch;
        utsname host{};
        ::uname(&host);
        std::printf("gui bench: kernel %s, %ld CPUs, Qt %s, offscreen, a %lld s x %d-worker "
                    "recording (workers re-forked every %lld s)\n",
                    host.release, sysconf(_SC_NPROCESSORS_ONLN), qVersion(),
                    static_cast<long long>(o.length_s), o.workers,
                    static_cast<long long>(o.refork_every_s));
        const std::string path = scratch.path_for("finished.db");
        {
            RecordingShape shape;
            shape.workers = o.workers;
            shape.refork_every_s = o.refork_every_s;
            SyntheticRecording recording(path, shape);
            recording.write_seconds(o.length_s);
            recording.finish();
        }
        bool missed = false;
        const FirstPaint first = measure_first_paint(path, o.rounds);
        std::printf("first paint of the Workers view (open -> drawn), %d rounds:\n", o.rounds);
        std::printf("  %-44s median %s (min %s, max %s)   target <= 2 s: %s\n", "first paint",
                    text_of(first.paint.median()).c_str(), text_of(first.paint.min()).c_str(),
                    text_of(first.paint.max()).c_str(),
                    first.paint.median() <= 2e6 ? "met" : "MISSED");
        missed |= first.paint.median() > 2e6;
        std::printf("  %-44s median %s\n", "report and findings ready (second thread)",
                    text_of(first.report.median()).c_str());
        std::printf("  %-44s median %s\n", "baseline: Recording::read_all() alone",
                    text_of(first.read.median()).c_str());
        std::printf("  ratio first paint / read_all: %.2fx\n",
                    paired_ratio(first.paint, first.read, o.rounds));

        const Replot replot = measure_replot(path, o.replots);
        std::printf("Workers view replot at 1600x900, %d replots:\n", o.replots);
        std::printf("  %-44s median %s (max %s)   target <= 20 ms: %s\n", "unchanged",
                    text_of(replot.unchanged.median()).c_str(),
                    text_of(replot.unchanged.max()).c_str(),
                    replot.unchanged.median() <= 20000 ? "met" : "MISSED");
        std::printf("  %-44s median %s (max %s)   target <= 20 ms: %s\n",
                    "after a zoom (decimated again)", text_of(replot.zoomed.median()).c_str(),
                    text_of(replot.zoomed.max()).c_str(),
                    replot.zoomed.median() <= 20000 ? "met" : "MISSED");
        missed |= replot.unchanged.median() > 20000 || replot.zoomed.median() > 20000;
        std::printf("  %-44s median %s\n", "baseline: every tick of RSS per lane, one plot",
                    text_of(replot.naive.median()).c_str());
        std::printf("  ratios to the baseline: unchanged %.2fx, zoomed %.2fx\n",
                    replot.unchanged.median() / replot.naive.median(),
                    replot.zoomed.median() / replot.naive.median());

        const Follow follow = measure_follow(argv[0], cli, scratch, o);
        std::printf("following a live %lld s recording at 2 Hz for %d s (writer: +1 s per s):\n",
                    static_cast<long long>(o.length_s), o.follow_s - 4);
        std::printf("  %-44s %.1f%% of one core (%d reads; last report %lld ms)   target <= 5%%: "
                    "%s\n",
                    "loaderlens-gui, Workers view shown", follow.gui_share * 100, follow.reads,
                    static_cast<long long>(follow.last_report_ms),
                    follow.gui_share <= 0.05 ? "met" : "MISSED");
        missed |= follow.gui_share > 0.05;
        std::printf("  %-44s %.1f%% of one core\n", "baseline: loaderlens tail --interval 500ms",
                    follow.tail_share * 100);
        std::printf("  ratio GUI / tail: %.2fx\n",
                    follow.gui_share / std::max(1e-9, follow.tail_share));
        return missed ? 3 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gui bench: %s\n", e.what());
        return 1;
    }
}
