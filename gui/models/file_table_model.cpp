// SPDX-License-Identifier: MIT
#include "file_table_model.hpp"

#include "display_text.hpp"

#include <algorithm>

namespace loaderlens::gui {

FileTableModel::FileTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void FileTableModel::set_files(std::vector<FileSummary> files) {
    beginResetModel();
    files_ = std::move(files);
    // The largest first: the data file, not libc, is what a user looks for.
    std::stable_sort(files_.begin(), files_.end(), [](const auto& a, const auto& b) {
        return a.total_rss.value.value_or(-1) > b.total_rss.value.value_or(-1);
    });
    endResetModel();
}

int FileTableModel::row_of_path(const QString& wanted) const {
    for (std::size_t i = 0; i < files_.size(); ++i)
        if (recorded_text(files_[i].object.path) == wanted) return static_cast<int>(i);
    return -1;
}

int FileTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(files_.size());
}

int FileTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : column_count;
}

QVariant FileTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* const names[column_count] = {
        "File", "Kind", "Size", "Peak Σ RSS", "Peak Σ PSS", "RSS / PSS", "Processes"};
    if (section < 0 || section >= column_count) return {};
    return QString(names[section]);
}

QVariant FileTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const FileSummary& f = files_[static_cast<std::size_t>(index.row())];
    const Kib size_kib = f.object.size_bytes ? Kib(*f.object.size_bytes / 1024) : Kib(std::nullopt);
    const bool ratio_known = f.total_rss.value && f.total_pss.value && *f.total_pss.value > 0;
    const double ratio_value =
        ratio_known ? static_cast<double>(*f.total_rss.value) / *f.total_pss.value : 0;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case path:
            return recorded_text(f.object.path);
        case kind:
            return QString(to_string(f.object.kind));
        case size:
            return kib_text(size_kib);
        case peak_rss:
            return kib_text(f.total_rss.value);
        case peak_pss:
            return kib_text(f.total_pss.value);
        case ratio:
            return ratio_known ? QString::number(ratio_value, 'f', 1) + "x" : QString("n/a");
        case processes:
            return static_cast<int>(f.processes.size());
        default:
            return {};
        }
    case SortRole:
        switch (index.column()) {
        case size:
            return sort_value(size_kib);
        case peak_rss:
            return sort_value(f.total_rss.value);
        case peak_pss:
            return sort_value(f.total_pss.value);
        case ratio:
            return ratio_value;
        default:
            return data(index, Qt::DisplayRole);
        }
    case ObjectIdRole:
        return static_cast<qlonglong>(f.object.id);
    case Qt::ToolTipRole:
        return index.column() == path ? recorded_text(f.object.path) : QVariant();
    default:
        return {};
    }
}

} // namespace loaderlens::gui
