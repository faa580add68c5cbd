// SPDX-License-Identifier: MIT
// The tables of the views and dialogs all behave alike: whole rows selected one at a time, no
// row numbers, the last column stretched; sortable ones sort by the model's number roles.
#pragma once

class QAbstractItemModel;
class QTableView;

namespace loaderlens::gui {

QTableView* make_table_view(QAbstractItemModel* model, bool sortable);

} // namespace loaderlens::gui
