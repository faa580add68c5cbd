// SPDX-License-Identifier: MIT
#include "plot_frame.hpp"

namespace loaderlens::gui {

PlotFrame::PlotFrame(QCustomPlot* plot, TimeWindow* window)
    : QObject(plot), plot_(plot), window_(window) {
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot_->setNoAntialiasingOnDrag(true);
    plot_->setPlottingHint(QCP::phCacheLabels, true);
    plot_->setMouseTracking(true);
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
    // The caller cleared the plot's items (clearItems()): the old lines are gone.
    cursors_.clear();
    markers_.clear();
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
    epochs_ = epochs;
    place_markers();
}

void PlotFrame::place_markers() {
    for (QCPAbstractItem* item : markers_)
        plot_->removeItem(item);
    markers_.clear();
    const auto rects = plot_->axisRects();
    for (const Epoch& epoch : epochs_) {
        const double t = static_cast<double>(epoch.start_ms) / 1000.0;
        for (int i = 0; i < rects.size(); ++i) {
            QCPAxisRect* rect = rects[i];
            auto* line = new QCPItemStraightLine(plot_);
            line->setClipAxisRect(rect);
            for (auto* position : {line->point1, line->point2})
                position->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
            line->point1->setCoords(t, 0);
            line->point2->setCoords(t, 1);
            line->setPen(QPen(QColor(0x99, 0x66, 0x00), 0, Qt::DashLine));
            line->setSelectable(false);
            markers_.push_back(line);
            if (i != 0) continue;
            auto* label = new QCPItemText(plot_);
            label->setClipAxisRect(rect);
            label->position->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
            label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
            label->position->setAxisRect(rect);
            label->position->setCoords(t, 0);
            label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
            label->setText(QString("epoch %1").arg(epoch.number));
            label->setColor(QColor(0x99, 0x66, 0x00));
            label->setSelectable(false);
            markers_.push_back(label);
        }
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
    if (redraw_) redraw_();
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace loaderlens::gui
