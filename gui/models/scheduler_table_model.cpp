// SPDX-License-Identifier: MIT
#include "scheduler_table_model.hpp"

#include "display_text.hpp"
#include "loaderlens/figure_text.hpp"

#include <QColor>

namespace loaderlens::gui {

SchedulerTableModel::SchedulerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void SchedulerTableModel::set_views(const std::vector<SchedulerView>& views,
                                    const std::vector<ProcessInfo>& processes) {
    beginResetModel();
    views_.clear();
    holders_.clear();
    for (const SchedulerView& v : views) {
        SchedulerView row = v;
        row.points.clear();
        QString holder_text;
        if (v.peak_process_id)
            for (const ProcessInfo& p : processes)
                if (p.id == *v.peak_process_id)
                    holder_text =
                        recorded_text(process_label(p)) +
                        (v.peak_process_kb ? ": " + kib_text(v.peak_process_kb) : QString());
        holders_.push_back(holder_text);
        views_.push_back(std::move(row));
    }
    endResetModel();
}

int SchedulerTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(views_.size());
}

int SchedulerTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : column_count;
}

QVariant SchedulerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* const names[column_count] = {
        "Counted by",          "Peak",  "At",
        "With the recorder",   "Limit", "Margin (with the recorder)",
        "Largest at the peak", "Counts"};
    if (section < 0 || section >= column_count) return {};
    return QString(names[section]);
}

QVariant SchedulerTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const SchedulerView& v = views_[static_cast<std::size_t>(index.row())];
    const bool unavailable = !v.peak;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case view: // the site's figure is marked (docs/slurm.md, "The modes")
            return recorded_text(v.name) + (v.site_role == "enforced"    ? " — the site's, kills"
                                            : v.site_role == "accounted" ? " — the site's, records"
                                                                         : "");
        case peak:
            return unavailable ? "unavailable: " + recorded_text(v.unavailable) : kib_text(v.peak);
        case at:
            return unavailable ? QString() : seconds_text(v.peak_ms);
        case counted:
            if (unavailable) return QString();
            if (v.recorder_in_figure) return kib_text(v.peak) + " (recorder included)";
            return kib_text(scheduler_counted_kb(v));
        case limit:
            return v.limit.kb ? kib_text(v.limit.kb) + " (" + recorded_text(v.limit.source) + ")"
                              : QString("none known");
        case margin:
            if (v.node && v.node->counted_kb) // one of the step's tasks: SLURM holds their sum
                return recorded_text(margin_text(v.node->margin_kb)) +
                       QString(" (Σ over the %1 tasks on the node)").arg(v.node->tasks);
            if (!v.margin_kb) return QString("-");
            return recorded_text(margin_text(v.margin_kb));
        case holder:
            return holders_[static_cast<std::size_t>(index.row())];
        case counts:
            return recorded_text(v.counts);
        default:
            return {};
        }
    case Qt::ToolTipRole:
        return recorded_text("From " + v.source + ". At the limit: " + v.at_limit);
    case Qt::ForegroundRole:
        if (index.column() == margin && v.judged_margin_kb() && *v.judged_margin_kb() < 0)
            return QColor(0xc6, 0x28, 0x28);
        return {};
    case KeyRole:
        return recorded_text(v.key);
    case PeakMsRole:
        return static_cast<qlonglong>(v.peak_ms);
    case SortRole:
        if (index.column() == peak) return sort_value(v.peak);
        if (index.column() == margin) return sort_value(v.judged_margin_kb());
        if (index.column() == counted) return sort_value(scheduler_counted_kb(v));
        return data(index, Qt::DisplayRole);
    default:
        return {};
    }
}

} // namespace loaderlens::gui
