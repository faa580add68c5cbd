// SPDX-License-Identifier: MIT
// The Overview's verdict: the diagnosis's findings, most severe first (its order), each with its
// severity, conclusion and key figure; the roles below carry what a click selects in the other
// views (time range, processes, worker slot, file).
#pragma once

#include "loaderlens/diagnosis.hpp"

#include <QAbstractTableModel>
#include <vector>

namespace loaderlens::gui {

class FindingListModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { severity, title, figure, column_count };
    enum DataRole {
        KindRole = Qt::UserRole + 1,
        FromMsRole,
        ToMsRole,
        SlotRole,
        FileRole,
        ProcessIdsRole, // QVariantList of qlonglong
        DetailRole      // evidence and advice, as plain text
    };

    explicit FindingListModel(QObject* parent = nullptr);
    void set_findings(std::vector<Finding> findings);
    const Finding* finding(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

  private:
    std::vector<Finding> findings_;
};

// Evidence and advice of a finding, one item per line.
QString finding_detail(const Finding& finding);
// Its key figure in words ("65,616 KiB", "4.7x").
QString figure_text(const Finding& finding);

} // namespace loaderlens::gui
