// SPDX-License-Identifier: MIT
#include "residency_view.hpp"

#include "display_text.hpp"

#include <QHBoxLayout>
#include <QScrollArea>
#include <QTimer>
#include <QVBoxLayout>

namespace loaderlens::gui {

namespace {
constexpr int max_slot_maps = 16; // beyond that, the report's table says the rest
}

ResidencyView::ResidencyView(const ViewContext& context, QWidget* parent)
    : DashboardView(context, parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel("File:"));
    files_ = new QComboBox;
    files_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    bar->addWidget(files_, 1);
    layout->addLayout(bar);
    caption_ = new QLabel;
    caption_->setWordWrap(true);
    layout->addWidget(caption_);
    plot_ = new QCustomPlot;
    frame_ = new PlotFrame(plot_, context_.window);
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(plot_);
    layout->addWidget(scroll, 1);
    // None resident: near white; all: dark blue. Not sampled (NaN): transparent over hatching.
    gradient_ = QCPColorGradient();
    gradient_.setColorStopAt(0, QColor(0xf7, 0xfb, 0xff));
    gradient_.setColorStopAt(0.35, QColor(0x9e, 0xca, 0xe1));
    gradient_.setColorStopAt(0.7, QColor(0x31, 0x82, 0xbd));
    gradient_.setColorStopAt(1, QColor(0x08, 0x30, 0x6b));
    gradient_.setNanHandling(QCPColorGradient::nhTransparent);
    connect(files_, &QComboBox::currentIndexChanged, this, [this] { draw_file(); });
}

void ResidencyView::refresh() {
    if (!document().has_data()) return;
    // The grids are rebuilt from every residency row (1 h x 32 workers: ~120 k rows of 256
    // buckets, ~50 ms): a followed recording redraws them every 2 s, not at each read.
    if (document().state() == RecordingDocument::State::live && drawn_.isValid() &&
        drawn_.elapsed() < 2000) {
        if (!later_) {
            later_ = true;
            QTimer::singleShot(static_cast<int>(2000 - drawn_.elapsed()), this, [this] {
                later_ = false;
                if (isVisible()) refresh();
            });
        }
        return;
    }
    drawn_.start();
    const QVariant current = files_->currentData();
    {
        const QSignalBlocker block(files_);
        files_->clear();
        for (const ResidencyFile& f : document().data().residency_files)
            files_->addItem(recorded_text(f.path) + "  (" + kib_text(f.size_bytes / 1024) + ", " +
                                to_string(f.method) + ")",
                            static_cast<qlonglong>(f.id));
        int index = files_->findData(current);
        // The loader's data file first when nothing was picked.
        if (index < 0 && document().report())
            for (const auto& r : document().report()->residency)
                if (r.loader_data_file) index = files_->findData(static_cast<qlonglong>(r.file.id));
        files_->setCurrentIndex(std::max(0, index));
    }
    draw_file();
}

QCPAxisRect* ResidencyView::add_map(int row, const ResidencyGrid& grid, const QString& title,
                                    double mib) {
    auto* rect = new QCPAxisRect(plot_);
    plot_->plotLayout()->addElement(row, 0, rect);
    PlotFrame::style(rect, "offset (MiB)");
    // Hatched where no sample was taken yet (NaN cells are transparent): never shown as 0.
    rect->setBackground(QBrush(QColor(0xbb, 0xbb, 0xbb), Qt::BDiagPattern));
    auto* map = new QCPColorMap(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
    map->data()->setSize(grid.columns, grid.rows);
    map->data()->setRange(QCPRange(grid.from_s, grid.to_s), QCPRange(0, mib));
    for (int c = 0; c < grid.columns; ++c)
        for (int r = 0; r < grid.rows; ++r)
            map->data()->setCell(c, r, grid.at(c, r));
    map->setGradient(gradient_);
    map->setDataRange(QCPRange(0, 1));
    map->setInterpolate(false);
    rect->axis(QCPAxis::atLeft)->setRange(0, mib);
    PlotFrame::add_label(rect, title)->setBrush(QColor(255, 255, 255, 200));
    return rect;
}

void ResidencyView::draw_file() {
    plot_->clearItems();
    plot_->clearPlottables();
    plot_->plotLayout()->clear();
    slot_maps_ = 0;
    const std::int64_t file_id = files_->currentData().toLongLong();
    if (file_id == 0) {
        caption_->setText(document().data().residency_files.empty()
                              ? "No file's residency was recorded: the residency tier follows "
                                "mapped files of 1 MiB or more and files given with --file."
                              : QString());
        frame_->rebuild();
        plot_->replot();
        return;
    }
    bool loader_file = false;
    if (document().report())
        for (const auto& r : document().report()->residency)
            if (r.file.id == file_id) loader_file = r.loader_data_file;
    const FileResidencyGrids grids =
        residency_grids(document().data(), file_id, document().processes(),
                        document().duration_ms(), 1200, loader_file);
    const double mib = static_cast<double>(grids.file.size_bytes) / (1024.0 * 1024.0);
    int row = 0;
    QCPAxisRect* cache = add_map(row++, grids.cache,
                                 "page cache (" + QString(to_string(grids.file.method)) + ")", mib);
    auto add_line = [&](const std::vector<PlotPoint>& points, const QColor& color,
                        const QString& name) {
        if (points.empty()) return;
        QCPGraph* g = plot_->addGraph(cache->axis(QCPAxis::atBottom), cache->axis(QCPAxis::atLeft));
        g->data()->set(PlotFrame::graph_data(points), true);
        g->setPen(QPen(color, 2));
        g->setName(name);
    };
    add_line(grids.cached_mib, QColor(0xff, 0x7f, 0x0e), "cached (MiB)");
    add_line(grids.read_progress, QColor(0x10, 0xa0, 0x40), "loader's distinct reads (MiB)");
    if (grids.evicted) add_map(row++, *grids.evicted, "evicted (cachestat)", mib);
    for (const auto& [slot, grid] : grids.slot_grids) {
        if (slot_maps_ >= max_slot_maps) break;
        add_map(row++, grid, QString("worker slot %1: present in its page tables").arg(slot), mib);
        ++slot_maps_;
    }
    auto* scale = new QCPColorScale(plot_);
    plot_->plotLayout()->addElement(0, 1, scale);
    scale->setGradient(gradient_);
    scale->setDataRange(QCPRange(0, 1));
    scale->axis()->setLabel("resident share");
    auto* margins = new QCPMarginGroup(plot_);
    for (QCPAxisRect* rect : plot_->axisRects())
        rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    scale->setMarginGroup(QCP::msTop, margins);
    plot_->setMinimumHeight(150 * row + 40);
    frame_->rebuild();
    frame_->share_time_axis();
    if (document().report()) frame_->set_epochs(document().report()->diagnosis.epochs);
    caption_->setText(
        QString("Each cell: the share of a bucket of %1 that was resident at that time (white: "
                "none, dark blue: all; hatched: not sampled yet). Green line: what the loader had "
                "read at least once; orange line: the file's page cache in MiB. %2")
            .arg(kib_text(grids.file.layout.bucket_pages * grids.file.page_size / 1024))
            .arg(grids.evicted
                     ? "Evictions from cachestat(2)."
                     : "Evictions: unavailable (" + QString(to_string(grids.file.method)) +
                           " gives cached pages only; cachestat needs Linux 6.5)."));
    plot_->replot();
}

} // namespace loaderlens::gui
