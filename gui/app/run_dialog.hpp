// SPDX-License-Identifier: MIT
// File ▸ Record or replay: the options of `loaderlens record -- CMD` or of `loaderlens replay
// DATASET` (the reference DataLoader), turned into the CLI's arguments. The GUI then runs the
// CLI and follows the recording it writes.
#pragma once

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QLineEdit>
#include <QSpinBox>
#include <QTabWidget>

namespace loaderlens::gui {

class RunDialog : public QDialog {
    Q_OBJECT
  public:
    explicit RunDialog(QWidget* parent = nullptr);
    QStringList arguments() const; // for the CLI, without its program name
    QString output() const { return output_->text(); }

  private:
    QTabWidget* tabs_ = nullptr;
    QLineEdit *command_ = nullptr, *mem_limit_ = nullptr, *dataset_ = nullptr, *extra_ = nullptr,
              *output_ = nullptr;
    QSpinBox *workers_ = nullptr, *batch_ = nullptr, *epochs_ = nullptr;
    QCheckBox* persistent_ = nullptr;
    QComboBox* pattern_ = nullptr;
};

} // namespace loaderlens::gui
