// SPDX-License-Identifier: MIT
#include "schedulers_view.hpp"

#include "display_text.hpp"
#include "table_view.hpp"

#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

namespace loaderlens::gui {

SchedulersView::SchedulersView(const ViewContext& context, QWidget* parent)
    : DashboardView(context, parent) {
    auto* layout = new QVBoxLayout(this);
    auto* splitter = new QSplitter(Qt::Vertical);
    plot_ = new QCustomPlot;
    plot_->setMinimumHeight(220);
    frame_ = new PlotFrame(plot_, context_.window);
    frame_->on_range([this] { redraw(); });
    model_ = new SchedulerTableModel(this);
    table_ = make_table_view(model_, false);
    table_->setWordWrap(false);
    splitter->addWidget(plot_);
    splitter->addWidget(table_);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter);
    connect(table_, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const double t = index.data(SchedulerTableModel::PeakMsRole).toLongLong() / 1000.0;
        context_.window->set_cursor(t);
    });
}

void SchedulersView::refresh() {
    const ReportData* report = document().report();
    if (!report) return;
    if (report != shown_) {
        shown_ = report;
        std::vector<ProcessInfo> infos;
        for (const auto& p : report->processes)
            infos.push_back(p.info);
        model_->set_views(report->diagnosis.schedulers, infos);
        table_->resizeColumnsToContents();
        plot_->clearItems();
        plot_->clearGraphs();
        series_.clear();
        graphs_.clear();
        QCPAxisRect* rect = plot_->axisRect();
        PlotFrame::style(rect, "MiB");
        plot_->legend->setVisible(true);
        plot_->legend->setFont(font());
        rect->insetLayout()->setInsetAlignment(0, Qt::AlignLeft | Qt::AlignTop);
        std::vector<std::pair<std::int64_t, QString>> limits;
        int index = 0;
        for (const SchedulerView& view : report->diagnosis.schedulers) {
            std::vector<LanePoint> points;
            for (const SeriesPoint& p : view.points)
                if (p.value) points.push_back({p.t_ms, *p.value});
            QCPGraph* graph = plot_->addGraph();
            graph->setPen(QPen(PlotFrame::color(index++), 2));
            graph->setName(recorded_text(view.name) +
                           (view.peak
                                ? "  (peak " + kib_text(view.peak) + ")"
                                : "  (unavailable: " + recorded_text(view.unavailable) + ")"));
            series_.push_back(std::move(points));
            graphs_.push_back(graph);
            if (view.limit.kb) {
                const QString label = "limit " + kib_text(view.limit.kb) + " (" +
                                      recorded_text(view.limit.source) + ")";
                if (std::find_if(limits.begin(), limits.end(), [&](const auto& l) {
                        return l.first == *view.limit.kb;
                    }) == limits.end())
                    limits.push_back({*view.limit.kb, label});
            }
        }
        frame_->rebuild();
        for (const auto& [kb, label] : limits) {
            auto* line = new QCPItemStraightLine(plot_);
            const double y = static_cast<double>(kb) / 1024.0;
            line->point1->setCoords(0, y);
            line->point2->setCoords(1, y);
            line->setPen(QPen(QColor(0xc6, 0x28, 0x28), 2, Qt::DashLine));
            auto* text = new QCPItemText(plot_);
            text->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
            text->position->setAxisRect(rect);
            text->position->setCoords(0.99, y);
            text->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
            text->setColor(QColor(0xc6, 0x28, 0x28));
            text->setText(label);
        }
        double top = 1;
        for (const SchedulerView& view : report->diagnosis.schedulers) {
            if (view.peak) top = std::max(top, static_cast<double>(*view.peak) / 1024.0);
            if (view.limit.kb && *view.limit.kb < (view.peak ? *view.peak : 0) * 4)
                top = std::max(top, static_cast<double>(*view.limit.kb) / 1024.0);
        }
        rect->axis(QCPAxis::atLeft)->setRange(0, top * 1.1);
        frame_->set_epochs(report->diagnosis.epochs);
    }
    frame_->schedule_redraw();
}

void SchedulersView::redraw() {
    const int columns = std::max(50, plot_->axisRect()->width());
    for (std::size_t i = 0; i < graphs_.size(); ++i) {
        graphs_[i]->data()->set(
            PlotFrame::graph_data(
                envelope(series_[i], context_.window->from_s(), context_.window->to_s(), columns)),
            true);
    }
}

} // namespace loaderlens::gui
