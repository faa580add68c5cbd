// SPDX-License-Identifier: MIT
// The window's menus and what they start: open (dialog, recent files), record / replay / attach
// through the CLI, stop, export the shown view, and the window layout kept between sessions.
#include "attach_dialog.hpp"
#include "main_window.hpp"
#include "run_controller.hpp"
#include "run_dialog.hpp"
#include "view_export.hpp"

#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QTimer>

namespace loaderlens::gui {

namespace {
constexpr int max_recent = 8;
}

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu("&File");
    file->addAction("&Open recording…", QKeySequence::Open, this, [this] { choose_and_open(); });
    recent_menu_ = file->addMenu("Open &recent");
    fill_recent_menu();
    file->addSeparator();
    file->addAction("Record or &replay…", QKeySequence(Qt::CTRL | Qt::Key_R), this,
                    [this] { start_run(); });
    file->addAction("&Attach to a running process…", QKeySequence(Qt::CTRL | Qt::Key_T), this,
                    [this] { start_attach(); });
    stop_action_ = file->addAction("&Stop recording", QKeySequence(Qt::CTRL | Qt::Key_Period), this,
                                   [this] { stop_run(); });
    stop_action_->setEnabled(false);
    file->addSeparator();
    file->addAction("&Export view (PNG, PDF, SVG)…", QKeySequence(Qt::CTRL | Qt::Key_E), this,
                    [this] { export_view(); });
    file->addSeparator();
    file->addAction("&Quit", QKeySequence::Quit, this, [this] { close(); });

    QMenu* view = menuBar()->addMenu("&View");
    for (std::size_t i = 0; i < views_.size(); ++i) {
        const QString name = views_[i]->name();
        view->addAction(views_[i]->title(), QKeySequence(Qt::CTRL | (Qt::Key_1 + int(i))), this,
                        [this, name] { show_view(name); });
    }
    view->addSeparator();
    view->addAction("&Whole run", QKeySequence(Qt::CTRL | Qt::Key_0), this,
                    [this] { time_window().show_all(); });
    view->addAction("Zoom &in", QKeySequence::ZoomIn, this, [this] {
        const double mid = (window_.from_s() + window_.to_s()) / 2,
                     half = (window_.to_s() - window_.from_s()) / 4;
        window_.set_range(mid - half, mid + half);
    });
    view->addAction("Zoom &out", QKeySequence::ZoomOut, this, [this] {
        const double mid = (window_.from_s() + window_.to_s()) / 2,
                     span = window_.to_s() - window_.from_s();
        window_.set_range(mid - span, mid + span);
    });
    view->addAction("Clear &selection", QKeySequence(Qt::Key_Escape), this,
                    [this] { selection_.clear(); });

    QMenu* help = menuBar()->addMenu("&Help");
    help->addAction("&About loaderlens", this, [this] {
        QMessageBox::about(
            this, "loaderlens",
            QString("<b>loaderlens %1</b><p>The memory of data-loader worker processes, over "
                    "time. Every figure's source: docs/figures.md; findings: "
                    "docs/findings.md; this window: docs/gui.md.</p>")
                .arg(LOADERLENS_VERSION));
    });
}

void MainWindow::choose_and_open() {
    const QString path = QFileDialog::getOpenFileName(this, "Open a recording", QString(),
                                                      "Recordings (*.db);;All files (*)");
    if (!path.isEmpty()) open(path);
}

void MainWindow::add_recent(const QString& path) {
    if (!remember_) return;
    QSettings settings;
    QStringList recent = settings.value("recent").toStringList();
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent.removeAll(absolute);
    recent.prepend(absolute);
    while (recent.size() > max_recent)
        recent.removeLast();
    settings.setValue("recent", recent);
    fill_recent_menu();
}

void MainWindow::fill_recent_menu() {
    recent_menu_->clear();
    const QStringList recent =
        remember_ ? QSettings().value("recent").toStringList() : QStringList();
    for (const QString& path : recent)
        recent_menu_->addAction(path, this, [this, path] { open(path); });
    recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::start_run() {
    RunDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted) launch(dialog.arguments(), dialog.output());
}

void MainWindow::start_attach() {
    AttachDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted && dialog.pid() > 0)
        launch(dialog.arguments(), dialog.output());
}

bool MainWindow::launch(const QStringList& arguments, const QString& output) {
    if (!run_) {
        run_ = new RunController(this);
        connect(run_, &RunController::recording_started, this,
                [this](const QString& path) { open(path, 40); });
        connect(run_, &RunController::finished, this, [this](const QString& summary, bool ok) {
            stop_action_->setEnabled(false);
            if (!ok) show_banner(summary);
            state_label_->setText(summary);
            // The recorder finished its file: read its end and the final report.
            QTimer::singleShot(300, this, [this] { document_.poll(); });
        });
    }
    if (run_->running()) {
        show_banner("A recording is already running: stop it first (Ctrl+.)");
        return false;
    }
    QString error;
    if (!run_->start(arguments, output, &error)) {
        show_banner(error);
        return false;
    }
    stop_action_->setEnabled(true);
    return true;
}

void MainWindow::stop_run() {
    if (run_) run_->stop();
}

void MainWindow::export_view() {
    DashboardView* v = current_view();
    if (!v) return;
    const QString base = QFileInfo(document_.path()).completeBaseName();
    const QString path = QFileDialog::getSaveFileName(
        this, "Export the " + v->title() + " view",
        (base.isEmpty() ? "loaderlens" : base) + "-" + v->name() + ".png",
        "PNG image (*.png);;PDF document (*.pdf);;SVG drawing (*.svg)");
    if (path.isEmpty()) return;
    QString error;
    if (!export_view_to(v, path, &error, document_.path())) show_banner(error);
}

void MainWindow::restore_layout() {
    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    show_view(settings.value("window/view", "overview").toString());
}

void MainWindow::save_layout() {
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    if (current_view()) settings.setValue("window/view", current_view()->name());
}

} // namespace loaderlens::gui
