// SPDX-License-Identifier: MIT
// Residency: for a followed file, heatmaps of file offset (MiB) against time: which parts were in
// the page cache, which were evicted (cachestat kernels), and which each worker slot had mapped
// and present; over the cache, the reference loader's read progress (distinct MiB read) and the
// cache's total. Readahead shows as the cache running far ahead of the progress line.
#pragma once

#include "dashboard_view.hpp"
#include "plot_frame.hpp"
#include "residency_grid.hpp"

#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>

namespace loaderlens::gui {

class ResidencyView : public DashboardView {
    Q_OBJECT
  public:
    ResidencyView(const ViewContext& context, QWidget* parent);
    QString name() const override { return "residency"; }
    QString title() const override { return "Residency"; }
    void refresh() override;
    QCustomPlot* plot() override { return plot_; }
    int lane_count() const override { return slot_maps_; }

  private:
    void draw_file();
    QCPAxisRect* add_map(int row, const ResidencyGrid& grid, const QString& title, double mib);

    QComboBox* files_ = nullptr;
    QLabel* caption_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    PlotFrame* frame_ = nullptr;
    QCPColorGradient gradient_;
    int slot_maps_ = 0;
    QElapsedTimer drawn_; // when the grids were last built
    bool later_ = false;  // a redraw is due once 2 s have passed
};

} // namespace loaderlens::gui
