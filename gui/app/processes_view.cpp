// SPDX-License-Identifier: MIT
#include "processes_view.hpp"

#include "table_view.hpp"

#include <QHeaderView>
#include <QVBoxLayout>

namespace loaderlens::gui {

ProcessesView::ProcessesView(const ViewContext& context, QWidget* parent)
    : DashboardView(context, parent) {
    auto* layout = new QVBoxLayout(this);
    filter_ = new QLineEdit;
    filter_->setPlaceholderText("Filter: role, slot, PID, command… (any column)");
    filter_->setClearButtonEnabled(true);
    layout->addWidget(filter_);
    model_ = new ProcessTableModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(ProcessTableModel::SortRole);
    proxy_->setFilterKeyColumn(-1);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    table_ = make_table_view(proxy_, true);
    layout->addWidget(table_, 1);
    connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (!current.isValid()) return;
                context_.selection->set(current.data(ProcessTableModel::ProcessIdRole).toLongLong(),
                                        current.data(ProcessTableModel::SlotRole).toInt(),
                                        context_.selection->file());
            });
    connect(context_.selection, &Selection::changed, this, [this] {
        const int row = model_->row_of(context_.selection->process_id());
        if (row < 0) return;
        const QModelIndex shown = proxy_->mapFromSource(model_->index(row, 0));
        if (shown.isValid() && table_->currentIndex().row() != shown.row()) {
            const QSignalBlocker block(table_->selectionModel());
            table_->selectRow(shown.row());
        }
    });
}

void ProcessesView::refresh() {
    const ReportData* report = document().report();
    if (!report || report == shown_) return;
    shown_ = report;
    model_->set_processes(report->processes, report->duration_ms);
    if (proxy_->sortColumn() < 0) table_->sortByColumn(ProcessTableModel::born, Qt::AscendingOrder);
    table_->resizeColumnsToContents();
}

} // namespace loaderlens::gui
