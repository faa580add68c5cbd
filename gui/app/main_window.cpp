// SPDX-License-Identifier: MIT
#include "main_window.hpp"

#include "files_view.hpp"
#include "overview_view.hpp"
#include "processes_view.hpp"
#include "qcustomplot_include.hpp"
#include "residency_view.hpp"
#include "run_controller.hpp"
#include "schedulers_view.hpp"
#include "workers_view.hpp"

#include <QCloseEvent>
#include <QCoreApplication>
#include <QDragEnterEvent>
#include <QFileInfo>
#include <QMimeData>
#include <QStatusBar>
#include <QTimer>
#include <QVBoxLayout>

namespace loaderlens::gui {

MainWindow::MainWindow(bool remember, QWidget* parent) : QMainWindow(parent), remember_(remember) {
    setWindowTitle("loaderlens");
    setAcceptDrops(true);
    auto* central = new QWidget;
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(4, 4, 4, 4);
    banner_ = new QLabel;
    banner_->setWordWrap(true);
    banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    banner_->setStyleSheet("QLabel { background: #fde2e1; color: #7a1010; padding: 6px; "
                           "border: 1px solid #e0a0a0; }");
    banner_->hide();
    layout->addWidget(banner_);
    tabs_ = new QTabWidget;
    tabs_->setDocumentMode(true);
    layout->addWidget(tabs_, 1);
    setCentralWidget(central);

    const ViewContext context{&document_, &window_, &selection_};
    views_ = {new OverviewView(context, this),   new WorkersView(context, this),
              new SchedulersView(context, this), new FilesView(context, this),
              new ResidencyView(context, this),  new ProcessesView(context, this)};
    stale_.assign(views_.size(), true);
    for (DashboardView* v : views_) {
        tabs_->addTab(v, v->title());
        connect(v, &DashboardView::show_view, this, [this](const QString& n) { show_view(n); });
    }
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { refresh_current(); });

    state_label_ = new QLabel("No recording: File ▸ Open (Ctrl+O), or drop a file here");
    cursor_label_ = new QLabel;
    statusBar()->addWidget(state_label_, 1);
    statusBar()->addPermanentWidget(cursor_label_);
    connect(&window_, &TimeWindow::cursor_changed, this, [this](double t) {
        cursor_label_->setText(t >= 0 ? QString("cursor %1 s").arg(t, 0, 'f', 2) : QString());
    });

    connect(&document_, &RecordingDocument::opened, this, [this] {
        open_retries_ = 0;
        banner_->hide();
        window_.set_duration(document_.duration_ms() / 1000.0);
        window_.show_all();
        setWindowTitle(QFileInfo(document_.path()).fileName() + " — loaderlens");
        add_recent(document_.path());
        document_changed();
    });
    connect(&document_, &RecordingDocument::grew, this, [this] {
        window_.set_duration(document_.duration_ms() / 1000.0);
        document_changed();
    });
    connect(&document_, &RecordingDocument::report_ready, this, [this] { document_changed(); });
    connect(&document_, &RecordingDocument::state_changed, this, [this] { update_status(); });
    connect(&document_, &RecordingDocument::failed, this, [this](const QString& message) {
        if (open_retries_ > 0 && !document_.has_data()) {
            --open_retries_; // a recorder that just started: its file is not written yet
            const QString path = document_.path();
            QTimer::singleShot(250, this, [this, path] { open(path, open_retries_); });
            return;
        }
        show_banner(message);
        update_status();
    });
    build_menus();
    if (remember_) restore_layout();
}

MainWindow::~MainWindow() = default;

void MainWindow::open(const QString& path, int follow_retries) {
    open_retries_ = follow_retries;
    state_label_->setText("Reading " + path + "…");
    document_.open(path);
}

bool MainWindow::open_now(const QString& path) {
    open_retries_ = 0;
    const bool ok = document_.open_now(path);
    if (!ok) show_banner(document_.error());
    return ok;
}

DashboardView* MainWindow::view(const QString& name) const {
    for (DashboardView* v : views_)
        if (v->name() == name) return v;
    return nullptr;
}

DashboardView* MainWindow::current_view() const {
    return static_cast<DashboardView*>(tabs_->currentWidget());
}

bool MainWindow::show_view(const QString& name) {
    DashboardView* v = view(name);
    if (!v) return false;
    tabs_->setCurrentWidget(v);
    return true;
}

QString MainWindow::banner_text() const {
    return banner_->isHidden() ? "" : banner_->text();
}
QString MainWindow::status_text() const {
    return state_label_->text();
}

void MainWindow::show_banner(const QString& message) {
    banner_->setText(message);
    banner_->show();
}

void MainWindow::update_status() {
    if (document_.state() == RecordingDocument::State::none) return;
    QString text = document_.path() + " — " + document_.state_text();
    // The findings of a followed recording are rebuilt less often than the plots (docs/gui.md).
    if (document_.state() == RecordingDocument::State::live)
        text += document_.report() ? QString(" · findings as of %1 s")
                                         .arg(document_.report()->duration_ms / 1000.0, 0, 'f', 1)
                                   : QString(" · findings: not built yet");
    state_label_->setText(text);
}

void MainWindow::document_changed() {
    std::fill(stale_.begin(), stale_.end(), true);
    update_status();
    refresh_current();
}

void MainWindow::refresh_current() {
    const int index = tabs_->currentIndex();
    if (index < 0 || !stale_[static_cast<std::size_t>(index)]) return;
    stale_[static_cast<std::size_t>(index)] = false;
    views_[static_cast<std::size_t>(index)]->refresh();
}

void MainWindow::refresh_now() {
    std::fill(stale_.begin(), stale_.end(), true);
    update_status();
    refresh_current();
    // The redraw is scheduled (PlotFrame::schedule_redraw), its replot queued: run both.
    for (int i = 0; i < 3; ++i)
        QCoreApplication::processEvents();
    if (DashboardView* view = current_view(); view && view->plot())
        view->plot()->replot(QCustomPlot::rpImmediateRefresh);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (remember_) save_layout();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.front().isLocalFile()) open(urls.front().toLocalFile());
}

} // namespace loaderlens::gui
