// SPDX-License-Identifier: MIT
// Overview: the verdict. The findings, most severe first, with the evidence and what to change
// for the one picked; what each scheduler will count against its limit; what was recorded.
// Clicking a finding selects its time range, process, slot and file in every other view;
// double-clicking opens the view that shows it best.
#pragma once

#include "dashboard_view.hpp"
#include "finding_list_model.hpp"
#include "scheduler_table_model.hpp"

#include <QLabel>
#include <QTableView>
#include <QTextBrowser>

namespace loaderlens::gui {

class OverviewView : public DashboardView {
    Q_OBJECT
  public:
    OverviewView(const ViewContext& context, QWidget* parent);
    QString name() const override { return "overview"; }
    QString title() const override { return "Overview"; }
    void refresh() override;
    // Selects finding `row` as a click does.
    void pick_finding(int row);
    const FindingListModel& findings() const { return *findings_; }

  private:
    void show_detail(int row);

    QLabel* headline_ = nullptr;
    QLabel* about_ = nullptr;
    FindingListModel* findings_ = nullptr;
    SchedulerTableModel* schedulers_ = nullptr;
    QTableView* finding_table_ = nullptr;
    QTableView* scheduler_table_ = nullptr;
    QTextBrowser* detail_ = nullptr;
    const ReportData* shown_ = nullptr;
};

} // namespace loaderlens::gui
