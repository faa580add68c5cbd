// SPDX-License-Identifier: MIT
// Schedulers: what each one counts over time (Σ RSS for SLURM jobacct_gather/linux, Σ PSS for
// UsePss, Σ RSS without shared for NoShared, the cgroup's charge and anon, the Kubernetes working
// set) against the limit each is held to, with the table of peaks and margins below.
#pragma once

#include "dashboard_view.hpp"
#include "envelope.hpp"
#include "plot_frame.hpp"
#include "scheduler_table_model.hpp"

#include <QTableView>
#include <vector>

namespace loaderlens::gui {

class SchedulersView : public DashboardView {
    Q_OBJECT
  public:
    SchedulersView(const ViewContext& context, QWidget* parent);
    QString name() const override { return "schedulers"; }
    QString title() const override { return "Schedulers"; }
    void refresh() override;
    QCustomPlot* plot() override { return plot_; }

  private:
    void redraw();

    QCustomPlot* plot_ = nullptr;
    PlotFrame* frame_ = nullptr;
    SchedulerTableModel* model_ = nullptr;
    QTableView* table_ = nullptr;
    std::vector<std::vector<LanePoint>> series_; // per view, KiB at every tick
    std::vector<QCPGraph*> graphs_;
    const ReportData* shown_ = nullptr;
};

} // namespace loaderlens::gui
