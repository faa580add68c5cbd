// SPDX-License-Identifier: MIT
#include "plot_frame.hpp"

#include <algorithm>
#include <QEvent>
#include <QTimer>

namespace loaderlens::gui {

PlotFrame::PlotFrame(QCustomPlot* plot, TimeWindow* window)
    : QObject(plot), plot_(plot), window_(window) {
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot_->setNoAntialiasingOnDrag(true);
    plot_->setPlottingHint(QCP::phCacheLabels, true);
    plot_->setMouseTracking(true);
    plot_->installEventFilter(this);
    connect(window_, &TimeWindow::range_changed, this,
            [this](double from_s, double to_s) { apply_range(from_s, to_s); });
    connect(window_, &TimeWindow::cursor_changed, this, [this](double t) { place_cursor(t); });
    connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        if (event->buttons() != Qt::NoButton || plot_->axisRects().isEmpty()) return;
        QCPAxisRect* rect = plot_->axisRectAt(event->pos());
        if (!rect) return;
        window_->set_cursor(rect->axis(QCPAxis::atBottom)->pixelToCoord(event->pos().x()));
    });
    connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this] { window_->show_all(); });
}

QColor PlotFrame::color(int index) {
    static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                     QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                     QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                     QColor(0xe3, 0x77, 0xc2), QColor(0x17, 0xbe, 0xcf)};
    return palette[static_cast<unsigned>(index) % 8];
}

void PlotFrame::mark_samples(QCPGraph* graph, std::size_t points, int columns) {
    const bool sparse = points * 8 <= static_cast<std::size_t>(std::max(columns, 1));
    graph->setScatterStyle(sparse ? QCPScatterStyle(QCPScatterStyle::ssDisc, 6)
                                  : QCPScatterStyle(QCPScatterStyle::ssNone));
}

void PlotFrame::style(QCPAxisRect* rect, const QString& value_label) {
    QCPAxis* left = rect->axis(QCPAxis::atLeft);
    left->setLabel(value_label);
    left->ticker()->setTickCount(3);
    left->grid()->setPen(QPen(QColor(0xe4, 0xe4, 0xe4), 0));
    rect->axis(QCPAxis::atBottom)->grid()->setPen(QPen(QColor(0xe4, 0xe4, 0xe4), 0));
    rect->axis(QCPAxis::atBottom)->setLabel("time since start (s)");
    rect->setRangeDrag(Qt::Horizontal);
    rect->setRangeZoom(Qt::Horizontal);
}

QCPItemText* PlotFrame::add_label(QCPAxisRect* rect, const QString& text, bool right) {
    auto* label = new QCPItemText(rect->parentPlot());
    label->setClipAxisRect(rect);
    label->position->setType(QCPItemPosition::ptAxisRectRatio);
    label->position->setAxisRect(rect);
    label->position->setCoords(right ? 0.995 : 0.005, 0.02);
    label->setPositionAlignment((right ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    label->setText(text);
    label->setSelectable(false);
    return label;
}

QVector<QCPGraphData> PlotFrame::graph_data(const std::vector<PlotPoint>& points) {
    QVector<QCPGraphData> out;
    out.reserve(static_cast<qsizetype>(points.size()));
    for (const PlotPoint& p : points)
        out.push_back(QCPGraphData(p.t_s, p.value));
    return out;
}

void PlotFrame::share_time_axis() {
    const auto rects = plot_->axisRects();
    for (int i = 0; i < rects.size(); ++i) {
        QCPAxis* bottom = rects[i]->axis(QCPAxis::atBottom);
        const bool last = i == rects.size() - 1;
        bottom->setTickLabels(last);
        bottom->setLabel(last ? "time since start (s)" : QString());
    }
}

void PlotFrame::rebuild() {
    for (QCPAxisRect* rect : plot_->axisRects()) {
        QCPAxis* bottom = rect->axis(QCPAxis::atBottom);
        bottom->setRange(window_->from_s(), window_->to_s());
        // A drag or wheel zoom in any rect moves the shared window; the window moves the rest.
        // Once per axis (a lambda cannot be a unique connection).
        if (bottom->property("loaderlens_linked").toBool()) continue;
        bottom->setProperty("loaderlens_linked", true);
        connect(bottom, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
                [this](const QCPRange& range) {
                    if (!applying_) window_->set_range(range.lower, range.upper);
                });
    }
    // The caller cleared the plot's items and graphs: the old lines are gone.
    cursors_.clear();
    markers_.clear();
    marker_lines_.clear();
    for (QCPAxisRect* rect : plot_->axisRects()) {
        auto* line = new QCPItemStraightLine(plot_);
        line->setClipAxisRect(rect);
        line->point1->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        line->point2->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        line->setPen(QPen(QColor(0x60, 0x60, 0x60), 0, Qt::DotLine));
        line->setSelectable(false);
        cursors_.push_back(line);
    }
    place_cursor(window_->cursor_s());
    place_markers();
}

void PlotFrame::set_epochs(const std::vector<Epoch>& epochs) {
    const bool same = epochs.size() == epochs_.size() &&
                      std::equal(epochs.begin(), epochs.end(), epochs_.begin(),
                                 [](const Epoch& a, const Epoch& b) {
                                     return a.number == b.number && a.start_ms == b.start_ms;
                                 });
    if (same && !marker_lines_.empty()) return; // a followed recording: most reads bring no epoch
    epochs_ = epochs;
    place_markers();
}

void PlotFrame::place_markers() {
    for (QCPAbstractItem* item : markers_)
        plot_->removeItem(item);
    for (QCPGraph* graph : marker_lines_)
        plot_->removeGraph(graph);
    markers_.clear();
    marker_lines_.clear();
    if (epochs_.empty()) return;
    // One impulse graph per axis rect draws all its epoch lines in one polyline, beneath the
    // data (the grid layer): one item per line and rect cost 2,230 items and 60 ms per replot
    // with 60 epochs x 35 lanes.
    // On the rect's right axis (hidden) with range 0..1, so a line ends at the rect's top: a
    // line to a huge value made Qt's raster engine clip it, at 2 ms a line.
    QVector<QCPGraphData> lines;
    for (const Epoch& epoch : epochs_)
        lines.push_back(QCPGraphData(static_cast<double>(epoch.start_ms) / 1000.0, 1.0));
    const auto rects = plot_->axisRects();
    for (QCPAxisRect* rect : rects) {
        QCPAxis* unit = rect->axis(QCPAxis::atRight);
        unit->setRange(0, 1);
        QCPGraph* graph = plot_->addGraph(rect->axis(QCPAxis::atBottom), unit);
        graph->setLineStyle(QCPGraph::lsImpulse);
        // Unsaturated, so a test that looks for coloured (data) pixels never counts a marker.
        graph->setPen(QPen(QColor(0xb0, 0xa8, 0x98), 0));
        graph->setAntialiased(false);
        graph->setLayer("grid");
        graph->setSelectable(QCP::stNone);
        graph->removeFromLegend();
        graph->setName("epochs");
        graph->data()->set(lines, true);
        marker_lines_.push_back(graph);
    }
    // Labels on the top rect only, at most about 20 of them.
    if (rects.isEmpty()) return;
    QCPAxisRect* top = rects.front();
    const std::size_t every = (epochs_.size() + 19) / 20;
    for (std::size_t i = 0; i < epochs_.size(); i += every) {
        auto* label = new QCPItemText(plot_);
        label->setClipAxisRect(top);
        label->position->setAxes(top->axis(QCPAxis::atBottom), top->axis(QCPAxis::atLeft));
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setAxisRect(top);
        label->position->setCoords(static_cast<double>(epochs_[i].start_ms) / 1000.0, 0);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
        label->setText(QString("epoch %1").arg(epochs_[i].number));
        label->setColor(QColor(0x70, 0x68, 0x60));
        label->setSelectable(false);
        markers_.push_back(label);
    }
}

void PlotFrame::place_cursor(double t_s) {
    for (auto* line : cursors_) {
        line->setVisible(t_s >= 0);
        line->point1->setCoords(t_s, 0);
        line->point2->setCoords(t_s, 1);
    }
    if (!cursors_.empty()) plot_->replot(QCustomPlot::rpQueuedReplot);
}

void PlotFrame::apply_range(double from_s, double to_s) {
    applying_ = true;
    for (QCPAxisRect* rect : plot_->axisRects())
        rect->axis(QCPAxis::atBottom)->setRange(from_s, to_s);
    applying_ = false;
    schedule_redraw();
}

void PlotFrame::schedule_redraw() {
    if (!plot_->isVisible()) { // another tab: drawn when shown, not at every change
        pending_ = true;
        return;
    }
    if (scheduled_) return;
    scheduled_ = true;
    QTimer::singleShot(0, this, [this] { redraw_now(); });
}

void PlotFrame::redraw_now() {
    scheduled_ = pending_ = false;
    if (redraw_) redraw_();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool PlotFrame::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_ && event->type() == QEvent::Show && pending_) schedule_redraw();
    return QObject::eventFilter(watched, event);
}

} // namespace loaderlens::gui
