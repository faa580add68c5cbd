// SPDX-License-Identifier: MIT
// The attach picker's list: what `loaderlens ps --json` printed (the CLI decides which processes
// are likely data-loader mains; the GUI never reads /proc itself). Likely loader mains first.
#pragma once

#include <QAbstractTableModel>
#include <QByteArray>
#include <QString>
#include <vector>

namespace loaderlens::gui {

struct ListedProcess {
    qlonglong pid = 0, ppid = 0, res_kib = 0;
    double cpu_percent = 0;
    QString user, comm, command;
    QString loader_role; // "main", "worker" or empty
    int workers = 0;     // loader mains: how many workers `ps` found under it
};

class ProcessPickerModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { pid, user, resident, cpu, loader_column, command, column_count };
    enum DataRole { PidRole = Qt::UserRole + 1, SortRole };

    explicit ProcessPickerModel(QObject* parent = nullptr);
    // Parses `ps --json` output; false (the list left as it was) with a one-line error().
    bool set_ps_json(const QByteArray& json);
    const QString& error() const { return error_; }
    const std::vector<ListedProcess>& processes() const { return processes_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

  private:
    std::vector<ListedProcess> processes_;
    QString error_;
};

} // namespace loaderlens::gui
