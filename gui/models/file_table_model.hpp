// SPDX-License-Identifier: MIT
// The Files view's table: each mapped file (data files, libraries, shared memory) with its size,
// the tree's peak Σ RSS and Σ PSS of it (one maps sample) and how many processes mapped it.
#pragma once

#include "loaderlens/report.hpp"

#include <QAbstractTableModel>
#include <vector>

namespace loaderlens::gui {

class FileTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { path, kind, size, peak_rss, peak_pss, ratio, processes, column_count };
    enum DataRole { SortRole = Qt::UserRole + 1, ObjectIdRole };

    explicit FileTableModel(QObject* parent = nullptr);
    void set_files(std::vector<FileSummary> files);
    int row_of_path(const QString& path) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

  private:
    std::vector<FileSummary> files_;
};

} // namespace loaderlens::gui
