// SPDX-License-Identifier: MIT
// Processes: the tree as a table (role, slot, generation, PID, lifetime, peak and final figures,
// exit), sortable by any column and filtered by a text typed above it. Picking a row selects the
// process: the Workers view highlights its lane.
#pragma once

#include "dashboard_view.hpp"
#include "process_table_model.hpp"

#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>

namespace loaderlens::gui {

class ProcessesView : public DashboardView {
    Q_OBJECT
  public:
    ProcessesView(const ViewContext& context, QWidget* parent);
    QString name() const override { return "processes"; }
    QString title() const override { return "Processes"; }
    void refresh() override;
    const ProcessTableModel& model() const { return *model_; }
    QSortFilterProxyModel& proxy() { return *proxy_; }

  private:
    ProcessTableModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* table_ = nullptr;
    QLineEdit* filter_ = nullptr;
    const ReportData* shown_ = nullptr;
};

} // namespace loaderlens::gui
