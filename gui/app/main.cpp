// SPDX-License-Identifier: MIT
// loaderlens-gui [RECORDING]: the dashboard. With --screenshot it renders and exits
// (screenshot.hpp).
#include "main_window.hpp"
#include "screenshot.hpp"

#include <cstdio>
#include <cstring>
#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>

int main(int argc, char** argv) {
    // Without a display: a screenshot renders offscreen unless a platform was chosen.
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--screenshot") == 0 &&
            qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
    QCoreApplication::setApplicationName("loaderlens-gui");
    QCoreApplication::setOrganizationName("loaderlens");
    QCoreApplication::setApplicationVersion(LOADERLENS_VERSION);

    QCommandLineParser parser;
    // QCommandLineParser prints the description as it is: wrapped here for 80 columns.
    parser.setApplicationDescription(
        "The memory of data-loader worker processes: a recording's workers, what each\n"
        "scheduler counts, and why. Opens RECORDING (finished, or still being written:\n"
        "it is followed).\n\nExamples:\n  loaderlens-gui run.db\n"
        "  loaderlens-gui --screenshot run.png --view all run.db");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("recording", "A recording (loaderlens record / replay).");
    QCommandLineOption screenshot("screenshot", "Render to OUT.png without a display and exit.",
                                  "OUT.png");
    QCommandLineOption view("view",
                            "With --screenshot: overview, workers, schedulers, files, residency, "
                            "processes, or all (OUT-NAME.png each).",
                            "NAME", "overview");
    QCommandLineOption size("size", "With --screenshot: the window's size.", "WxH", "1600x1000");
    parser.addOptions({screenshot, view, size});
    // --help, --version and a mistyped option need no display (a login node, an ssh session),
    // but a QApplication aborts without one (exit 134): they are answered before it exists. The
    // arguments are parsed again after it: it takes Qt's own (-platform, -style) out of them.
    QStringList raw;
    for (int i = 0; i < argc; ++i)
        raw << QString::fromLocal8Bit(argv[i]);
    const bool parsed_raw = parser.parse(raw);
    const bool display = !qEnvironmentVariableIsEmpty("DISPLAY") ||
                         !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
                         !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") ||
                         raw.contains("-platform") || raw.contains("--platform");
    if (!parsed_raw && !display) {
        std::fprintf(stderr, "loaderlens-gui: %s\n", parser.errorText().toLocal8Bit().constData());
        return 2;
    }
    if (parsed_raw && (parser.isSet("help") || parser.isSet("version"))) {
        QCoreApplication no_display(argc, argv);
        if (parser.isSet("help")) parser.showHelp(0);
        parser.showVersion();
    }
    QApplication app(argc, argv);
    if (!parser.parse(QApplication::arguments())) {
        std::fprintf(stderr, "loaderlens-gui: %s\n", parser.errorText().toLocal8Bit().constData());
        return 2;
    }
    if (parser.isSet("help")) parser.showHelp(0);
    if (parser.isSet("version")) parser.showVersion();
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1) {
        std::fprintf(stderr, "loaderlens-gui: one recording at a time (got %lld)\n",
                     static_cast<long long>(positional.size()));
        return 2;
    }

    if (parser.isSet(screenshot)) {
        if (positional.isEmpty()) {
            std::fprintf(stderr, "loaderlens-gui: --screenshot needs a RECORDING\n");
            return 2;
        }
        loaderlens::gui::ScreenshotRequest request;
        request.recording = positional.front();
        request.output = parser.value(screenshot);
        request.view = parser.value(view);
        const QStringList wh = parser.value(size).split('x');
        bool w_ok = false, h_ok = false;
        if (wh.size() == 2) request.size = QSize(wh[0].toInt(&w_ok), wh[1].toInt(&h_ok));
        if (!w_ok || !h_ok || request.size.width() < 200 || request.size.height() < 150 ||
            request.size.width() > 16384 || request.size.height() > 16384) {
            std::fprintf(stderr, "loaderlens-gui: --size %s: not WxH from 200x150 to 16384x16384\n",
                         parser.value(size).toLocal8Bit().constData());
            return 2;
        }
        return loaderlens::gui::take_screenshot(request);
    }

    loaderlens::gui::MainWindow window;
    window.show();
    if (!positional.isEmpty()) window.open(positional.front());
    return QApplication::exec();
}
