// SPDX-License-Identifier: MIT
#include "screenshot.hpp"

#include "loaderlens/output_rule.hpp"
#include "main_window.hpp"
#include "qcustomplot_include.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <QBuffer>
#include <QCoreApplication>
#include <QFileInfo>
#include <QImage>

namespace loaderlens::gui {

namespace {

void say(const QString& line) {
    std::fprintf(stderr, "loaderlens-gui: %s\n", line.toLocal8Bit().constData());
}

QString output_for(const QString& output, const QString& view, bool all) {
    if (!all) return output;
    const QFileInfo info(output);
    return info.path() + "/" + info.completeBaseName() + "-" + view + "." +
           (info.suffix().isEmpty() ? QString("png") : info.suffix());
}

} // namespace

int take_screenshot(const ScreenshotRequest& request) {
    MainWindow window(false);
    const bool all = request.view == "all";
    if (!all && !window.view(request.view)) {
        say("--view " + request.view +
            ": no such view (overview, workers, schedulers, files, residency, processes, all)");
        return 2;
    }
    // Every picture's file under the CLI's output rule (loaderlens/output_rule.hpp), checked and
    // created before anything is read: never the recording (or its -wal, -shm), never through a
    // symbolic link, never a FIFO or a device, written whole.
    InputFiles inputs;
    inputs.add_recording(request.recording.toStdString());
    std::map<QString, std::unique_ptr<WholeOutput>> outputs;
    try {
        for (DashboardView* view : window.views()) {
            if (!all && view->name() != request.view) continue;
            const QString path = output_for(request.output, view->name(), all);
            outputs[view->name()] = std::make_unique<WholeOutput>(
                "--screenshot " + path.toStdString(), path.toStdString(), inputs);
        }
    } catch (const OutputRuleError& e) {
        std::fprintf(stderr, "loaderlens-gui: %s\n", e.what());
        return e.exit_code;
    }
    if (!window.open_now(request.recording)) {
        say(window.document().error());
        return 2;
    }
    if (!window.document().wait_for_report(120000)) {
        // A recording `report` refuses: the same one line, at once.
        const QString& reason = window.document().report_error();
        say(reason.isEmpty() ? request.recording + ": " + window.document().error() : reason);
        return 2;
    }
    window.resize(request.size);
    window.show();
    int status = 0;
    for (DashboardView* view : window.views()) {
        if (!all && view->name() != request.view) continue;
        window.show_view(view->name());
        window.refresh_now();
        QCoreApplication::processEvents();
        window.refresh_now(); // again at its laid-out size (plots decimate to their width)
        if (view->plot()) view->plot()->replot();
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        WholeOutput& output = *outputs.at(view->name());
        std::optional<std::string> problem;
        if (!window.grab().save(&buffer, "PNG"))
            problem = "--screenshot " +
                      output_for(request.output, view->name(), all).toStdString() +
                      ": the picture could not be encoded";
        else
            problem = output.commit(output.write(png.toStdString()));
        if (problem) {
            std::fprintf(stderr, "loaderlens-gui: %s\n", problem->c_str());
            status = 1;
        }
    }
    return status;
}

} // namespace loaderlens::gui
