// SPDX-License-Identifier: MIT
#include "process_picker_model.hpp"

#include "display_text.hpp"

#include <algorithm>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace loaderlens::gui {

ProcessPickerModel::ProcessPickerModel(QObject* parent) : QAbstractTableModel(parent) {}

bool ProcessPickerModel::set_ps_json(const QByteArray& json) {
    QJsonParseError parse{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parse);
    if (parse.error != QJsonParseError::NoError || !doc.isObject() ||
        !doc.object().value("processes").isArray()) {
        error_ = "loaderlens ps --json printed no process list: " +
                 (parse.error != QJsonParseError::NoError ? parse.errorString()
                                                          : QString("no \"processes\" array"));
        return false;
    }
    std::vector<ListedProcess> out;
    for (const QJsonValue& value : doc.object().value("processes").toArray()) {
        const QJsonObject o = value.toObject();
        ListedProcess p;
        p.pid = o.value("pid").toInteger();
        p.ppid = o.value("ppid").toInteger();
        p.res_kib = o.value("res_kib").toInteger(-1);
        p.cpu_percent = o.value("cpu_percent").toDouble();
        p.user = o.value("user").toString();
        p.comm = o.value("comm").toString();
        QStringList argv;
        for (const QJsonValue& arg : o.value("argv").toArray())
            argv << arg.toString();
        p.command = argv.isEmpty() ? "[" + p.comm + "]" : argv.join(' ');
        if (o.value("loader").isObject()) {
            const QJsonObject loader = o.value("loader").toObject();
            p.loader_role = loader.value("role").toString();
            p.workers = static_cast<int>(loader.value("workers").toArray().size()); // their PIDs
        }
        if (p.pid > 0) out.push_back(std::move(p));
    }
    // Likely loader mains first (what one attaches to), then by resident memory.
    std::stable_sort(out.begin(), out.end(), [](const ListedProcess& a, const ListedProcess& b) {
        const bool a_main = a.loader_role == "main", b_main = b.loader_role == "main";
        if (a_main != b_main) return a_main;
        return a.res_kib > b.res_kib;
    });
    beginResetModel();
    processes_ = std::move(out);
    endResetModel();
    error_.clear();
    return true;
}

int ProcessPickerModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(processes_.size());
}

int ProcessPickerModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : column_count;
}

QVariant ProcessPickerModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* const names[column_count] = {"PID",   "User",        "Resident",
                                                    "CPU %", "Data loader", "Command"};
    if (section < 0 || section >= column_count) return {};
    return QString(names[section]);
}

QVariant ProcessPickerModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const ListedProcess& p = processes_[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case pid:
            return p.pid;
        case user:
            return p.user;
        case resident:
            return p.res_kib < 0 ? QString("n/a") : kib_text(p.res_kib);
        case cpu:
            return QString::number(p.cpu_percent, 'f', 1);
        case loader_column:
            if (p.loader_role == "main") return QString("main, %1 workers").arg(p.workers);
            return p.loader_role;
        case command:
            return p.command;
        default:
            return {};
        }
    case SortRole:
        if (index.column() == resident) return p.res_kib;
        if (index.column() == cpu) return p.cpu_percent;
        return data(index, Qt::DisplayRole);
    case PidRole:
        return p.pid;
    case Qt::ToolTipRole:
        return p.command;
    default:
        return {};
    }
}

} // namespace loaderlens::gui
