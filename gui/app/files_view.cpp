// SPDX-License-Identifier: MIT
#include "files_view.hpp"

#include "table_view.hpp"

#include <map>
#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

namespace loaderlens::gui {

FilesView::FilesView(const ViewContext& context, QWidget* parent) : DashboardView(context, parent) {
    auto* layout = new QVBoxLayout(this);
    auto* splitter = new QSplitter(Qt::Vertical);
    model_ = new FileTableModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(FileTableModel::SortRole);
    table_ = make_table_view(proxy_, true);
    table_->horizontalHeader()->setStretchLastSection(false);
    table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    caption_ = new QLabel;
    caption_->setWordWrap(true);
    caption_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    plot_ = new QCustomPlot;
    plot_->setMinimumHeight(220);
    frame_ = new PlotFrame(plot_, context_.window);
    frame_->on_range([this] { redraw(); });
    auto* bottom = new QWidget;
    auto* bottom_layout = new QVBoxLayout(bottom);
    bottom_layout->setContentsMargins(0, 0, 0, 0);
    bottom_layout->addWidget(caption_);
    bottom_layout->addWidget(plot_, 1);
    splitter->addWidget(table_);
    splitter->addWidget(bottom);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 2);
    layout->addWidget(splitter);
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (!current.isValid()) return;
                const QModelIndex source = proxy_->mapToSource(current);
                const QString path =
                    model_->index(source.row(), FileTableModel::path).data().toString();
                context_.selection->set(context_.selection->process_id(),
                                        context_.selection->slot(), path);
            });
    connect(context_.selection, &Selection::changed, this, [this] { refresh(); });
}

void FilesView::refresh() {
    const ReportData* report = document().report();
    if (!report) return;
    if (report != shown_) {
        shown_ = report;
        model_->set_files(report->files);
        table_->sortByColumn(FileTableModel::peak_rss, Qt::DescendingOrder);
        table_->resizeColumnsToContents();
        table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    }
    int row = model_->row_of_path(context_.selection->file());
    if (row < 0 && model_->rowCount() > 0) // none picked: the largest file
        row = proxy_->mapToSource(proxy_->index(0, 0)).row();
    if (row < 0) return;
    const QModelIndex source = model_->index(row, 0);
    const QModelIndex shown = proxy_->mapFromSource(source);
    if (table_->currentIndex().row() != shown.row()) {
        const QSignalBlocker block(table_->selectionModel());
        table_->selectRow(shown.row());
    }
    show_file(source.data(FileTableModel::ObjectIdRole).toLongLong(), source.data().toString());
}

void FilesView::show_file(std::int64_t object_id, const QString& path) {
    object_id_ = object_id;
    // Per lane: a worker slot (its generations summed at each maps tick) or main.
    std::map<std::pair<int, bool>, std::vector<LanePoint>> by_lane; // (slot or -1, pss)
    for (const MapRow& row : document().data().maps) {
        if (row.object_id != object_id) continue;
        auto p = document().processes().find(row.process_id);
        if (p == document().processes().end()) continue;
        const int lane = p->second.role == Role::worker ? p->second.slot
                         : p->second.role == Role::main ? -1
                                                        : -2;
        if (lane == -2) continue;
        for (bool pss : {false, true}) {
            const std::int64_t value = pss ? row.figures.pss_kb : row.figures.rss_kb;
            auto& points = by_lane[{lane, pss}];
            if (!points.empty() && points.back().t_ms == row.t_ms)
                points.back().kib = saturating_add(points.back().kib, value);
            else
                points.push_back({row.t_ms, value});
        }
    }
    plot_->clearItems();
    plot_->clearGraphs();
    lines_.clear();
    PlotFrame::style(plot_->axisRect(), "MiB of this file");
    plot_->legend->setVisible(by_lane.size() <= 16);
    double top = 1;
    for (auto& [key, points] : by_lane) {
        Line line;
        line.name = (key.first < 0 ? QString("main") : QString("slot %1").arg(key.first)) +
                    (key.second ? " PSS" : " RSS");
        line.pss = key.second;
        line.color = key.first < 0 ? 7 : key.first;
        for (const LanePoint& p : points)
            top = std::max(top, static_cast<double>(p.kib) / 1024);
        line.points = std::move(points);
        line.graph = plot_->addGraph();
        line.graph->setName(line.name);
        line.graph->setPen(QPen(PlotFrame::color(line.color), line.pss ? 1 : 2,
                                line.pss ? Qt::DashLine : Qt::SolidLine));
        lines_.push_back(std::move(line));
    }
    plot_->axisRect()->axis(QCPAxis::atLeft)->setRange(0, top * 1.1);
    caption_->setText(
        by_lane.empty()
            ? "<b>" + path.toHtmlEscaped() +
                  "</b>: no worker or main process held 1 MiB or more of it at a maps sample"
            : "<b>" + path.toHtmlEscaped() +
                  "</b>: each worker slot's RSS (solid) and PSS (dashed) of this file over time "
                  "(maps tier: /proc/PID/smaps). RSS counts a shared page in every process; PSS "
                  "divides it among them.");
    frame_->rebuild();
    if (document().report()) frame_->set_epochs(document().report()->diagnosis.epochs);
    frame_->schedule_redraw();
}

void FilesView::redraw() {
    const int columns = std::max(50, plot_->axisRect()->width());
    for (Line& line : lines_) {
        line.graph->data()->set(
            PlotFrame::graph_data(
                envelope(line.points, context_.window->from_s(), context_.window->to_s(), columns)),
            true);
    }
}

} // namespace loaderlens::gui
