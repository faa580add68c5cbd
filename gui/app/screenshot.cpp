// SPDX-License-Identifier: MIT
#include "screenshot.hpp"

#include "main_window.hpp"
#include "qcustomplot_include.hpp"

#include <cstdio>
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
    if (!window.open_now(request.recording)) {
        say(window.document().error());
        return 2;
    }
    if (!window.document().wait_for_report(120000)) {
        say(request.recording + ": " + window.document().error());
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
        const QString path = output_for(request.output, view->name(), all);
        if (!window.grab().save(path, "PNG")) {
            say(path + ": could not be written");
            status = 1;
        }
    }
    return status;
}

} // namespace loaderlens::gui
