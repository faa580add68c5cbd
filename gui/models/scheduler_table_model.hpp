// SPDX-License-Identifier: MIT
// What each scheduler will count: one row per view of the diagnosis (SLURM linux, UsePss,
// NoShared, cgroup, cgroup usage, Kubernetes working set) with its peak, when, the limit it is
// held against (and where that limit came from), the margin, the process holding the most of it
// at the peak (per-process views), and what happens at the limit.
#pragma once

#include "loaderlens/diagnosis.hpp"

#include <QAbstractTableModel>
#include <vector>

namespace loaderlens::gui {

class SchedulerTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    // counted: the peak plus the recorder (a process of the step), what the margin is held
    // against the limit with: the figure the limit finding names.
    enum Column { view, peak, at, counted, limit, margin, holder, counts, column_count };
    enum DataRole { KeyRole = Qt::UserRole + 1, PeakMsRole, SortRole };

    explicit SchedulerTableModel(QObject* parent = nullptr);
    // The views, without their points (the table needs none); `processes` names the holders.
    void set_views(const std::vector<SchedulerView>& views,
                   const std::vector<ProcessInfo>& processes = {});

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

  private:
    std::vector<SchedulerView> views_;
    std::vector<QString> holders_; // per view: "worker 2 (gen 0, pid 1234): 52.0 MiB" or empty
};

} // namespace loaderlens::gui
