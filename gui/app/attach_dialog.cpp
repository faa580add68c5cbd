// SPDX-License-Identifier: MIT
#include "attach_dialog.hpp"

#include "run_controller.hpp"
#include "table_view.hpp"

#include <QDialogButtonBox>
#include <QDir>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QVBoxLayout>

namespace loaderlens::gui {

AttachDialog::AttachDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle("Attach to a running process");
    resize(900, 500);
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    loaders_only_ = new QCheckBox("Only likely data loaders");
    loaders_only_->setChecked(true);
    all_users_ = new QCheckBox("Every user's processes");
    auto* refresh = new QPushButton("Refresh");
    bar->addWidget(loaders_only_);
    bar->addWidget(all_users_);
    bar->addStretch();
    bar->addWidget(refresh);
    layout->addLayout(bar);
    message_ = new QLabel;
    message_->setWordWrap(true);
    layout->addWidget(message_);
    model_ = new ProcessPickerModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(ProcessPickerModel::SortRole);
    table_ = make_table_view(proxy_, true);
    layout->addWidget(table_, 1);
    auto* form = new QFormLayout;
    output_ = new QLineEdit(QDir::current().filePath("attached.db"));
    form->addRow("Recording file:", output_);
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText("Record");
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (pid() > 0) accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(refresh, &QPushButton::clicked, this, [this] { list(); });
    connect(loaders_only_, &QCheckBox::toggled, this, [this] { list(); });
    connect(all_users_, &QCheckBox::toggled, this, [this] { list(); });
    connect(table_, &QTableView::doubleClicked, this, [this] {
        if (pid() > 0) accept();
    });
    connect(&ps_, &QProcess::finished, this, [this](int code) {
        const QByteArray out = ps_.readAllStandardOutput();
        if (code != 0) {
            message_->setText("loaderlens ps failed: " +
                              QString::fromLocal8Bit(ps_.readAllStandardError()).trimmed());
            return;
        }
        if (!model_->set_ps_json(out)) {
            message_->setText(model_->error());
            return;
        }
        table_->resizeColumnsToContents();
        message_->setText(
            model_->rowCount() == 0
                ? (loaders_only_->isChecked()
                       ? "No likely data loader is running. Untick the box to see "
                         "every process."
                       : "No process listed.")
                : QString("%1 processes (from loaderlens ps)").arg(model_->rowCount()));
        if (model_->rowCount() > 0) table_->selectRow(0);
    });
    connect(&ps_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            message_->setText("Cannot start " + cli_program() + ": " + ps_.errorString());
    });
    list();
}

void AttachDialog::list() {
    if (ps_.state() != QProcess::NotRunning) return;
    QStringList args{"ps", "--json"};
    if (loaders_only_->isChecked()) args << "--loaders";
    if (all_users_->isChecked()) args << "--all";
    message_->setText("Listing processes…");
    ps_.start(cli_program(), args);
}

bool AttachDialog::select_pid(qlonglong wanted) {
    for (int r = 0; r < proxy_->rowCount(); ++r)
        if (proxy_->index(r, 0).data(ProcessPickerModel::PidRole).toLongLong() == wanted) {
            table_->selectRow(r);
            return true;
        }
    return false;
}

qlonglong AttachDialog::pid() const {
    const QModelIndex current = table_->currentIndex();
    return current.isValid() ? current.data(ProcessPickerModel::PidRole).toLongLong() : 0;
}

QStringList AttachDialog::arguments() const {
    return {"record", "--force", "-o", output_->text(), "--pid", QString::number(pid())};
}

} // namespace loaderlens::gui
