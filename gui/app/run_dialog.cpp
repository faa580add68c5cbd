// SPDX-License-Identifier: MIT
#include "run_dialog.hpp"

#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QVBoxLayout>

namespace loaderlens::gui {

namespace {

QWidget* with_browse(QLineEdit* edit, QWidget* parent, bool save) {
    auto* row = new QWidget;
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit, 1);
    auto* browse = new QPushButton("Browse…");
    QObject::connect(browse, &QPushButton::clicked, parent, [edit, parent, save] {
        const QString path =
            save ? QFileDialog::getSaveFileName(parent, "Recording file", edit->text(), "*.db")
                 : QFileDialog::getOpenFileName(parent, "Dataset", edit->text());
        if (!path.isEmpty()) edit->setText(path);
    });
    layout->addWidget(browse);
    return row;
}

QSpinBox* spin(int low, int high, int value) {
    auto* box = new QSpinBox;
    box->setRange(low, high);
    box->setValue(value);
    return box;
}

} // namespace

RunDialog::RunDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle("Record or replay");
    auto* layout = new QVBoxLayout(this);
    tabs_ = new QTabWidget;

    auto* record = new QWidget;
    auto* record_form = new QFormLayout(record);
    command_ = new QLineEdit;
    command_->setPlaceholderText("python train.py --workers 5");
    record_form->addRow("Command:", command_);
    mem_limit_ = new QLineEdit;
    mem_limit_->setPlaceholderText("e.g. 16GiB (optional: the job's limit, for the margins)");
    record_form->addRow("Memory limit:", mem_limit_);
    tabs_->addTab(record, "Record a command");

    auto* replay = new QWidget;
    auto* replay_form = new QFormLayout(replay);
    dataset_ = new QLineEdit;
    dataset_->setPlaceholderText(".npy, raw records or an LMDB directory (loaderlens mkdata)");
    replay_form->addRow("Dataset:", with_browse(dataset_, this, false));
    workers_ = spin(0, 4096, 4);
    replay_form->addRow("Workers:", workers_);
    batch_ = spin(1, 1 << 24, 32);
    replay_form->addRow("Batch:", batch_);
    epochs_ = spin(1, 1000000, 2);
    replay_form->addRow("Epochs:", epochs_);
    persistent_ = new QCheckBox("persistent workers (kept across epochs)");
    replay_form->addRow("", persistent_);
    pattern_ = new QComboBox;
    pattern_->addItems(
        {"shuffle", "sequential", "random", "distributed", "shards", "zipf", "windows"});
    replay_form->addRow("Pattern:", pattern_);
    extra_ = new QLineEdit;
    extra_->setPlaceholderText("more replay options, e.g. --step-time 20ms --cow-heap 64");
    replay_form->addRow("Options:", extra_);
    tabs_->addTab(replay, "Replay a dataset");
    layout->addWidget(tabs_);

    auto* out_form = new QFormLayout;
    output_ = new QLineEdit(QDir::current().filePath("run.db"));
    out_form->addRow("Recording file:", with_browse(output_, this, true));
    layout->addLayout(out_form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText("Start");
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        const bool recording = tabs_->currentIndex() == 0;
        if (recording ? command_->text().trimmed().isEmpty() : dataset_->text().isEmpty()) {
            QMessageBox::warning(this, "Record or replay",
                                 recording ? "Which command? Type it as in a shell."
                                           : "Which dataset? loaderlens mkdata makes one.");
            return;
        }
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QStringList RunDialog::arguments() const {
    QStringList args;
    if (tabs_->currentIndex() == 0) {
        args << "record"
             << "--force"
             << "-o" << output_->text();
        if (!mem_limit_->text().trimmed().isEmpty())
            args << "--mem-limit" << mem_limit_->text().trimmed();
        args << "--" << QProcess::splitCommand(command_->text());
        return args;
    }
    args << "replay" << dataset_->text() << "-q"
         << "--force"
         << "-o" << output_->text() << "--workers" << QString::number(workers_->value())
         << "--batch" << QString::number(batch_->value()) << "--epochs"
         << QString::number(epochs_->value()) << "--pattern" << pattern_->currentText();
    if (persistent_->isChecked()) args << "--persistent";
    args << QProcess::splitCommand(extra_->text());
    return args;
}

} // namespace loaderlens::gui
