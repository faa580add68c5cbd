// SPDX-License-Identifier: MIT
#include "table_view.hpp"

#include <QHeaderView>
#include <QTableView>

namespace loaderlens::gui {

QTableView* make_table_view(QAbstractItemModel* model, bool sortable) {
    auto* table = new QTableView;
    table->setModel(model);
    table->setSortingEnabled(sortable);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setSelectionMode(QAbstractItemView::SingleSelection);
    table->verticalHeader()->hide();
    table->horizontalHeader()->setStretchLastSection(true);
    return table;
}

} // namespace loaderlens::gui
