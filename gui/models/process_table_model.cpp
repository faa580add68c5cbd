// SPDX-License-Identifier: MIT
#include "process_table_model.hpp"

#include "display_text.hpp"
#include "loaderlens/figure_text.hpp"

namespace loaderlens::gui {

ProcessTableModel::ProcessTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ProcessTableModel::set_processes(std::vector<ProcessSummary> processes, std::int64_t end_ms) {
    beginResetModel();
    processes_ = std::move(processes);
    end_ms_ = end_ms;
    endResetModel();
}

int ProcessTableModel::row_of(std::int64_t process_id) const {
    for (std::size_t i = 0; i < processes_.size(); ++i)
        if (processes_[i].info.id == process_id) return static_cast<int>(i);
    return -1;
}

int ProcessTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(processes_.size());
}

int ProcessTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : column_count;
}

QVariant ProcessTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* const names[column_count] = {
        "Process",   "Role",      "Slot",     "Generation", "PID",      "Born",
        "Exited",    "Lifetime",  "Peak RSS", "Peak PSS",   "Peak USS", "Final RSS",
        "Final PSS", "Final USS", "Exit",     "Command"};
    if (section < 0 || section >= column_count) return {};
    return QString(names[section]);
}

QVariant ProcessTableModel::display(const ProcessSummary& p, int column) const {
    const ProcessInfo& info = p.info;
    const std::int64_t end = info.exit_ms.value_or(end_ms_);
    switch (column) {
    case process:
        return recorded_text(process_label(info));
    case role_column:
        return QString(to_string(info.role));
    case slot:
        return info.slot >= 0 ? QVariant(info.slot) : QVariant(QString("-"));
    case generation:
        return info.generation >= 0 ? QVariant(info.generation) : QVariant(QString("-"));
    case pid:
        return static_cast<qlonglong>(info.key.pid);
    case born:
        return seconds_text(info.birth_ms);
    case exited:
        return info.exit_ms ? seconds_text(*info.exit_ms) : QString("alive at end");
    case lifetime:
        return seconds_text(std::max<std::int64_t>(0, end - info.birth_ms));
    case peak_rss:
        return kib_text(p.rss.value);
    case peak_pss:
        return kib_text(p.pss.value);
    case peak_uss:
        return kib_text(p.uss.value);
    case final_rss:
        return kib_text(p.final_rss);
    case final_pss: // a reading kept from before the end says its age
        if (p.final_pss && p.final_pss_age_ms > 0)
            return kib_text(p.final_pss) + " (" + recorded_text(age_text(p.final_pss_age_ms)) + ")";
        return kib_text(p.final_pss);
    case final_uss:
        return kib_text(p.final_uss);
    case exit:
        return info.exit_ms || info.exit_status ? exit_text(info.exit_status) : QString("running");
    case command:
        return recorded_text(info.cmdline.empty() ? info.comm : info.cmdline);
    default:
        return {};
    }
}

QVariant ProcessTableModel::sort_key(const ProcessSummary& p, int column) const {
    const ProcessInfo& info = p.info;
    switch (column) {
    case slot:
        return info.slot;
    case generation:
        return info.generation;
    case pid:
        return static_cast<qlonglong>(info.key.pid);
    case born:
        return static_cast<qlonglong>(info.birth_ms);
    case exited:
        return static_cast<qlonglong>(info.exit_ms.value_or(end_ms_ + 1));
    case lifetime:
        return static_cast<qlonglong>(info.exit_ms.value_or(end_ms_) - info.birth_ms);
    case peak_rss:
        return sort_value(p.rss.value);
    case peak_pss:
        return sort_value(p.pss.value);
    case peak_uss:
        return sort_value(p.uss.value);
    case final_rss:
        return sort_value(p.final_rss);
    case final_pss:
        return sort_value(p.final_pss);
    case final_uss:
        return sort_value(p.final_uss);
    default:
        return display(p, column);
    }
}

QVariant ProcessTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const ProcessSummary& p = processes_[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        return display(p, index.column());
    case Qt::ToolTipRole:
        return recorded_text(p.info.cmdline);
    case Qt::TextAlignmentRole:
        return index.column() >= slot && index.column() <= final_uss
                   ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter))
                   : QVariant();
    case SortRole:
        return sort_key(p, index.column());
    case ProcessIdRole:
        return static_cast<qlonglong>(p.info.id);
    case SlotRole:
        return p.info.slot;
    default:
        return {};
    }
}

} // namespace loaderlens::gui
