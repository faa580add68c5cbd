// SPDX-License-Identifier: MIT
// What every plot of the dashboard shares: one time axis (zoom and pan with the mouse wheel and
// drag, horizontally only, mirrored in every other plot through the TimeWindow), a cursor line
// that follows the mouse in all plots at once, epoch markers on every axis rect, and one look
// (HiDPI-aware fonts, no antialiasing on dense lines: the replot budget is 20 ms at 1600x900).
#pragma once

#include "envelope.hpp"
#include "loaderlens/diagnosis.hpp"
#include "qcustomplot_include.hpp"
#include "time_window.hpp"

#include <functional>
#include <QObject>
#include <vector>

namespace loaderlens::gui {

class PlotFrame : public QObject {
    Q_OBJECT
  public:
    PlotFrame(QCustomPlot* plot, TimeWindow* window);

    // After the axis rects changed and the plot's items and graphs were cleared: links their
    // time axes, cursor lines and markers again.
    void rebuild();
    void set_epochs(const std::vector<Epoch>& epochs);
    // Called with the visible range before each replot that follows a range change (views
    // decimate their series to the width in pixels here).
    void on_range(std::function<void()> redraw) { redraw_ = std::move(redraw); }
    // Redraws once the events queued now are handled: a range change and new rows arriving
    // together cost one redraw; a hidden plot redraws when it is shown.
    void schedule_redraw();
    // Every axis rect but the last hides its time tick labels (lanes stacked on one axis).
    void share_time_axis();

    static void style(QCPAxisRect* rect, const QString& value_label);
    // A caption in a corner of an axis rect (top left, or top right), clipped to it.
    static QCPItemText* add_label(QCPAxisRect* rect, const QString& text, bool right = false);
    static QVector<QCPGraphData> graph_data(const std::vector<PlotPoint>& points);
    static QColor color(int index); // a palette that tells 8 lanes apart, then repeats
    // A series with few points drawn (a sparse tier, or one sample in a short recording) shows
    // a dot at each sample: a single point draws no line at all, and dots say where the figures
    // were read. Dense series keep plain lines.
    static void mark_samples(QCPGraph* graph, std::size_t points, int columns);

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    void apply_range(double from_s, double to_s);
    void redraw_now();
    void place_cursor(double t_s);
    void place_markers();

    QCustomPlot* plot_;
    TimeWindow* window_;
    std::vector<Epoch> epochs_;
    std::vector<QCPItemStraightLine*> cursors_;
    std::vector<QCPAbstractItem*> markers_; // epoch labels
    std::vector<QCPGraph*> marker_lines_;   // one per axis rect
    std::function<void()> redraw_;
    bool applying_ = false;
    bool scheduled_ = false, pending_ = false;
};

} // namespace loaderlens::gui
