// SPDX-License-Identifier: MIT
// Workers: who holds what. On top, Σ PSS stacked by lane (main, helpers, each worker slot): the
// tree's real share of memory, split. Below, one lane per worker slot (its generations joined,
// the gaps between them left blank), then main and helpers apart, each with the figures toggled
// on (RSS, PSS, USS by default; anon/file/shmem, Private_Dirty). All on the shared time axis.
#pragma once

#include "dashboard_view.hpp"
#include "envelope.hpp"
#include "lane_store.hpp"
#include "plot_frame.hpp"

#include <map>
#include <QCheckBox>
#include <QScrollArea>
#include <vector>

namespace loaderlens::gui {

class WorkersView : public DashboardView {
    Q_OBJECT
  public:
    WorkersView(const ViewContext& context, QWidget* parent);
    QString name() const override { return "workers"; }
    QString title() const override { return "Workers"; }
    void refresh() override;
    QCustomPlot* plot() override { return plot_; }
    int lane_count() const override { return worker_lanes_; }
    // Redraws the visible range only (what a zoom, a pan or new rows cost).
    void redraw();

  private:
    struct Lane {
        LaneKey key;
        QCPAxisRect* rect = nullptr;
        std::vector<TimeSpan> gaps;
        std::map<Figure, QCPGraph*> graphs;
    };
    void rebuild_lanes();
    void fill_stack(int columns);
    void highlight_selection();
    bool lane_visible(const Lane& lane) const;
    int columns() const;

    QCustomPlot* plot_ = nullptr;
    PlotFrame* frame_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    std::map<Figure, QCheckBox*> toggles_;
    std::vector<Lane> lanes_;
    QCPAxisRect* stack_rect_ = nullptr;
    QCPItemText* stack_label_ = nullptr; // says when Σ PSS is partial
    std::vector<QCPGraph*> stack_graphs_;
    std::vector<LaneKey> stack_keys_;
    std::vector<LaneKey> built_for_; // the lanes the axis rects were made for
    int worker_lanes_ = 0;
};

} // namespace loaderlens::gui
