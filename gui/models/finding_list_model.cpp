// SPDX-License-Identifier: MIT
#include "finding_list_model.hpp"

#include "display_text.hpp"
#include "loaderlens/figure_text.hpp"

#include <QColor>
#include <QVariantList>

namespace loaderlens::gui {

namespace {

QColor severity_color(Severity severity) {
    switch (severity) {
    case Severity::critical:
        return QColor(0xc6, 0x28, 0x28);
    case Severity::warning:
        return QColor(0xe6, 0x8a, 0x00);
    case Severity::info:
        return QColor(0x1e, 0x6f, 0xc8);
    }
    return Qt::gray;
}

} // namespace

// What the key figure is and its value, as the other consumers write it ("margin: over by
// 81.5 MiB", never a bare "-83420 KiB").
QString figure_text(const Finding& f) {
    return recorded_text(finding_figure_text(f));
}

QString finding_detail(const Finding& f) {
    QString out;
    for (const auto& line : f.evidence)
        out += "• " + recorded_text(line) + "\n";
    if (!f.advice.empty()) out += "\nWhat to change: " + recorded_text(f.advice);
    return out.trimmed();
}

FindingListModel::FindingListModel(QObject* parent) : QAbstractTableModel(parent) {}

void FindingListModel::set_findings(std::vector<Finding> findings) {
    beginResetModel();
    findings_ = std::move(findings);
    endResetModel();
}

const Finding* FindingListModel::finding(int row) const {
    if (row < 0 || row >= static_cast<int>(findings_.size())) return nullptr;
    return &findings_[static_cast<std::size_t>(row)];
}

int FindingListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(findings_.size());
}

int FindingListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : column_count;
}

QVariant FindingListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case severity:
        return QString("Severity");
    case title:
        return QString("Finding");
    case figure:
        return QString("Key figure");
    default:
        return {};
    }
}

QVariant FindingListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Finding& f = findings_[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        if (index.column() == severity) return QString(to_string(f.severity));
        if (index.column() == title) return recorded_text(f.title);
        if (index.column() == figure) return figure_text(f);
        return {};
    case Qt::ToolTipRole:
        return finding_detail(f);
    case Qt::ForegroundRole:
        return index.column() == severity ? QVariant(severity_color(f.severity)) : QVariant();
    case KindRole:
        return recorded_text(f.kind);
    case FromMsRole:
        return static_cast<qlonglong>(f.from_ms);
    case ToMsRole:
        return static_cast<qlonglong>(f.to_ms);
    case SlotRole:
        return f.slot;
    case FileRole:
        return recorded_text(f.file);
    case ProcessIdsRole: {
        QVariantList ids;
        for (auto id : f.process_ids)
            ids.push_back(static_cast<qlonglong>(id));
        return ids;
    }
    case DetailRole:
        return finding_detail(f);
    default:
        return {};
    }
}

} // namespace loaderlens::gui
