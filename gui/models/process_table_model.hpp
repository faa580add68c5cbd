// SPDX-License-Identifier: MIT
// The Processes view's table: every process of the tree with its role, worker slot and
// generation, PID, lifetime, peak and final figures and exit. Sorts by number (SortRole) through
// a QSortFilterProxyModel; ProcessIdRole gives the recording's process id for selection.
#pragma once

#include "loaderlens/report.hpp"

#include <QAbstractTableModel>
#include <vector>

namespace loaderlens::gui {

class ProcessTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column {
        process,
        role_column,
        slot,
        generation,
        pid,
        born,
        exited,
        lifetime,
        peak_rss,
        peak_pss,
        peak_uss,
        final_rss,
        final_pss,
        final_uss,
        exit,
        command,
        column_count
    };
    enum DataRole { SortRole = Qt::UserRole + 1, ProcessIdRole, SlotRole };

    explicit ProcessTableModel(QObject* parent = nullptr);
    // The processes of a report; `end_ms` is the recording's length (the lifetime of a process
    // still alive at its end).
    void set_processes(std::vector<ProcessSummary> processes, std::int64_t end_ms);
    // The row of a process id, -1 if none.
    int row_of(std::int64_t process_id) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

  private:
    QVariant display(const ProcessSummary& p, int column) const;
    QVariant sort_key(const ProcessSummary& p, int column) const;

    std::vector<ProcessSummary> processes_;
    std::int64_t end_ms_ = 0;
};

} // namespace loaderlens::gui
