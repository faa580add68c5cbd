// SPDX-License-Identifier: MIT
// Records from the GUI the way hotspot runs perf: `loaderlens record ...` or `loaderlens replay
// ...` as a child process (QProcess), its recording opened and followed as soon as its file
// exists. Stopping sends SIGINT, what Ctrl+C in a terminal sends: `record` forwards it to its
// command and finishes the recording; `record --pid` stops recording. The CLI is the one next to
// this program (or LOADERLENS_CLI), so the GUI never samples /proc itself.
#pragma once

#include <QDateTime>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

namespace loaderlens::gui {

// The loaderlens CLI to run: $LOADERLENS_CLI, else `loaderlens` beside this program or in the
// build tree it came from, else the one on PATH.
QString cli_program();

class RunController : public QObject {
    Q_OBJECT
  public:
    explicit RunController(QObject* parent = nullptr);
    // Sends SIGINT to a recorder still running and waits up to 10 s: its file is then finished.
    ~RunController() override;

    // false, with a one-line reason: another run is going, or the CLI cannot be started.
    bool start(const QStringList& arguments, const QString& output, QString* error);
    void stop();
    bool running() const { return process_.state() != QProcess::NotRunning; }
    qint64 pid() const { return process_.processId(); }
    // What the CLI wrote to stderr so far (the last 64 KiB).
    const QString& errors() const { return errors_; }

  signals:
    void recording_started(const QString& path);
    // The run ended: one line (exit status, the CLI's last error line); ok = exit status 0.
    void finished(const QString& summary, bool ok);

  private:
    QProcess process_;
    QTimer wait_for_file_;
    QString output_, errors_, what_;
    QDateTime before_; // the output's mtime before the run (invalid: there was none)
    bool announced_ = false;
};

} // namespace loaderlens::gui
