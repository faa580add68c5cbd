// SPDX-License-Identifier: MIT
// File ▸ Attach: pick a running process to record (`loaderlens record --pid`) from what
// `loaderlens ps --json` lists, likely data-loader mains first.
#pragma once

#include "process_picker_model.hpp"

#include <QCheckBox>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QSortFilterProxyModel>
#include <QTableView>

namespace loaderlens::gui {

class AttachDialog : public QDialog {
    Q_OBJECT
  public:
    explicit AttachDialog(QWidget* parent = nullptr);
    qlonglong pid() const;
    QStringList arguments() const;
    QString output() const { return output_->text(); }
    void set_output(const QString& path) { output_->setText(path); }
    // Lists again (runs `loaderlens ps --json`).
    void list();
    bool listing() const { return ps_.state() != QProcess::NotRunning; }
    const ProcessPickerModel& model() const { return *model_; }
    // Selects the row of `pid`; false if it is not listed.
    bool select_pid(qlonglong pid);

  private:
    ProcessPickerModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTableView* table_ = nullptr;
    QCheckBox *loaders_only_ = nullptr, *all_users_ = nullptr;
    QLabel* message_ = nullptr;
    QLineEdit* output_ = nullptr;
    QProcess ps_;
};

} // namespace loaderlens::gui
