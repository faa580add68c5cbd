// SPDX-License-Identifier: MIT
#include "files_view.hpp"

#include "display_text.hpp"
#include "table_view.hpp"

#include <algorithm>
#include <map>
#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>
#include <set>

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

namespace {

// A lane of the plot: a worker slot of one node (its generations summed at each maps tick), or
// main. Merged recordings keep each node's slots apart.
struct LaneId {
    int part = 0;
    int slot = -1; // -1: main
    auto operator<=>(const LaneId&) const = default;
};

// The spans between one lane's processes where none of them was alive: the line breaks there
// rather than joining one generation's last sample to the next one's first.
std::vector<TimeSpan> gaps_between(std::vector<const ProcessInfo*> lives) {
    std::sort(lives.begin(), lives.end(),
              [](const ProcessInfo* a, const ProcessInfo* b) { return a->birth_ms < b->birth_ms; });
    std::vector<TimeSpan> gaps;
    std::int64_t alive_until = INT64_MIN;
    for (const ProcessInfo* p : lives) {
        if (alive_until != INT64_MIN && p->birth_ms > alive_until)
            gaps.push_back({alive_until, p->birth_ms});
        alive_until = std::max(alive_until, p->exit_ms.value_or(INT64_MAX));
    }
    return gaps;
}

} // namespace

void FilesView::show_file(std::int64_t object_id, const QString& path) {
    object_id_ = object_id;
    std::map<std::pair<LaneId, bool>, std::vector<LanePoint>> by_lane; // (lane, pss)
    std::map<LaneId, std::set<const ProcessInfo*>> lane_processes;
    std::set<std::int64_t> sample_times;
    for (const MapRow& row : document().data().maps) {
        if (row.object_id != object_id) continue;
        sample_times.insert(row.t_ms);
        auto p = document().processes().find(row.process_id);
        if (p == document().processes().end()) continue;
        const ProcessInfo& process = p->second;
        if (process.role != Role::worker && process.role != Role::main) continue;
        const LaneId lane{process.part, process.role == Role::worker ? process.slot : -1};
        lane_processes[lane].insert(&process);
        for (bool pss : {false, true}) {
            const std::int64_t value = pss ? row.figures.pss_kb : row.figures.rss_kb;
            auto& points = by_lane[{lane, pss}];
            if (!points.empty() && points.back().t_ms == row.t_ms)
                points.back().kib = saturating_add(points.back().kib, value);
            else
                points.push_back({row.t_ms, value});
        }
    }
    // Every process that held the lane's slot, not only those with a row here, bounds its gaps.
    for (const auto& [id, process] : document().processes()) {
        if (process.role != Role::worker && process.role != Role::main) continue;
        const LaneId lane{process.part, process.role == Role::worker ? process.slot : -1};
        if (auto it = lane_processes.find(lane); it != lane_processes.end())
            it->second.insert(&process);
    }
    plot_->clearItems();
    plot_->clearGraphs();
    lines_.clear();
    PlotFrame::style(plot_->axisRect(), "MiB of this file");
    plot_->legend->setVisible(by_lane.size() <= 16);
    double top = 1;
    for (auto& [key, points] : by_lane) {
        const auto& [lane, pss] = key;
        Line line;
        line.name = part_prefix(document().data(), lane.part) +
                    (lane.slot < 0 ? QString("main") : QString("slot %1").arg(lane.slot)) +
                    (pss ? " PSS" : " RSS");
        line.pss = pss;
        line.color = lane.slot < 0 ? 7 : lane.slot;
        for (const LanePoint& p : points)
            top = std::max(top, static_cast<double>(p.kib) / 1024);
        line.points = std::move(points);
        const auto& lives = lane_processes[lane];
        line.gaps = gaps_between({lives.begin(), lives.end()});
        line.graph = plot_->addGraph();
        line.graph->setName(line.name);
        line.graph->setPen(QPen(PlotFrame::color(line.color), line.pss ? 1 : 2,
                                line.pss ? Qt::DashLine : Qt::SolidLine));
        lines_.push_back(std::move(line));
    }
    plot_->axisRect()->axis(QCPAxis::atLeft)->setRange(0, top * 1.1);
    QString few_samples;
    if (sample_times.size() < 3)
        few_samples = QString(" Only %1 maps sample%2 of it: the maps tier reads smaps every "
                              "5 s unless told otherwise, less often over its CPU budget; record "
                              "with <tt>--interval maps=1s</tt> for a finer line.")
                          .arg(sample_times.size())
                          .arg(sample_times.size() == 1 ? "" : "s");
    caption_->setText(
        by_lane.empty()
            ? "<b>" + path.toHtmlEscaped() +
                  "</b>: no worker or main process held 1 MiB or more of it at a maps sample"
            : "<b>" + path.toHtmlEscaped() +
                  "</b>: each worker slot's RSS (solid) and PSS (dashed) of this file over time "
                  "(maps tier: /proc/PID/smaps). RSS counts a shared page in every process; PSS "
                  "divides it among them." +
                  few_samples);
    frame_->rebuild();
    if (document().report()) frame_->set_epochs(document().report()->diagnosis.epochs);
    frame_->schedule_redraw();
}

void FilesView::redraw() {
    const int columns = std::max(50, plot_->axisRect()->width());
    for (Line& line : lines_) {
        const auto points = envelope(line.points, context_.window->from_s(),
                                     context_.window->to_s(), columns, line.gaps);
        PlotFrame::mark_samples(line.graph, points.size(), columns);
        line.graph->data()->set(PlotFrame::graph_data(points), true);
    }
}

} // namespace loaderlens::gui
