// SPDX-License-Identifier: MIT
// The dashboard's window: the six views on one time axis, the document they draw from, and what
// opens recordings (argument, File ▸ Open, drag and drop, recent files) or makes them (a
// `loaderlens record` / `replay` subprocess whose file is followed while it is written).
#pragma once

#include "dashboard_view.hpp"
#include "recording_document.hpp"
#include "time_window.hpp"

#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QTabWidget>
#include <vector>

namespace loaderlens::gui {

class RunController;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    // `remember`: restore and save the window's layout and recent files (QSettings); off for
    // --screenshot and tests, whose pictures must not depend on a user's last session.
    explicit MainWindow(bool remember = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    RecordingDocument& document() { return document_; }
    TimeWindow& time_window() { return window_; }
    Selection& selection() { return selection_; }
    // Opens in the background (the window stays responsive); `follow_retries`: a file a
    // recorder just started may not be a recording for a moment (retried every 250 ms).
    void open(const QString& path, int follow_retries = 0);
    // Opens and reads before returning; false: the message is in the window and in error().
    bool open_now(const QString& path);
    // The view by its name (overview, workers, schedulers, files, residency, processes).
    DashboardView* view(const QString& name) const;
    std::vector<DashboardView*> views() const { return views_; }
    bool show_view(const QString& name);
    DashboardView* current_view() const;
    // The message shown in the window's banner (empty: none).
    QString banner_text() const;
    QString status_text() const;
    // Draws the shown view now (tests and screenshots).
    void refresh_now();
    // Runs `loaderlens ARGUMENTS` (record or replay writing `output`) and follows its file;
    // false: the reason is in the banner. stop_run() sends it SIGINT, as Ctrl+C in a terminal.
    bool launch(const QStringList& arguments, const QString& output);
    void stop_run();
    RunController* run_controller() const { return run_; }

  protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

  private:
    // main_window_actions.cpp
    void build_menus();
    void add_recent(const QString& path);
    void fill_recent_menu();
    void choose_and_open();
    void start_run();
    void start_attach();
    void export_view();
    void restore_layout();
    void save_layout();

    void show_banner(const QString& message);
    void update_status();
    void document_changed();
    void refresh_current();

    bool remember_;
    RecordingDocument document_;
    TimeWindow window_;
    Selection selection_;
    QTabWidget* tabs_ = nullptr;
    QLabel* banner_ = nullptr;
    QLabel* state_label_ = nullptr;
    QLabel* cursor_label_ = nullptr;
    QMenu* recent_menu_ = nullptr;
    QAction* stop_action_ = nullptr;
    std::vector<DashboardView*> views_;
    std::vector<bool> stale_; // per view: the document changed since it was drawn
    RunController* run_ = nullptr;
    int open_retries_ = 0;
};

} // namespace loaderlens::gui
