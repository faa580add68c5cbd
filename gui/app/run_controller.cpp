// SPDX-License-Identifier: MIT
#include "run_controller.hpp"

#include <csignal>
#include <QCoreApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QStandardPaths>

namespace loaderlens::gui {

QString cli_program() {
    const QString env = qEnvironmentVariable("LOADERLENS_CLI");
    if (!env.isEmpty()) return env;
    const QString dir = QCoreApplication::applicationDirPath();
    for (const QString& candidate : {dir + "/loaderlens", dir + "/../cli/loaderlens"})
        if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).canonicalFilePath();
#ifdef LOADERLENS_CLI_BUILD_PATH
    if (QFileInfo(LOADERLENS_CLI_BUILD_PATH).isExecutable()) return LOADERLENS_CLI_BUILD_PATH;
#endif
    const QString found = QStandardPaths::findExecutable("loaderlens");
    return found.isEmpty() ? "loaderlens" : found;
}

RunController::RunController(QObject* parent) : QObject(parent) {
    wait_for_file_.setInterval(100);
    connect(&wait_for_file_, &QTimer::timeout, this, [this] {
        const QFileInfo file(output_);
        // A file that was there before the run (replaced with --force) must be the new one.
        if (!announced_ && file.exists() && file.size() > 0 && file.lastModified() != before_) {
            announced_ = true;
            wait_for_file_.stop();
            emit recording_started(output_);
        }
    });
    connect(&process_, &QProcess::readyReadStandardError, this, [this] {
        errors_ += QString::fromLocal8Bit(process_.readAllStandardError());
        if (errors_.size() > 65536) errors_ = errors_.right(65536);
    });
    // The report a replay prints is not needed here: the GUI reads the recording.
    process_.setStandardOutputFile(QProcess::nullDevice());
    connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart) return;
        wait_for_file_.stop();
        emit finished("Cannot start " + process_.program() + ": " + process_.errorString(), false);
    });
    connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        wait_for_file_.stop();
        if (!announced_ && QFileInfo(output_).exists()) {
            announced_ = true;
            emit recording_started(output_);
        }
        QString last;
        const QStringList lines = errors_.split('\n', Qt::SkipEmptyParts);
        if (!lines.isEmpty()) last = ": " + lines.back().trimmed();
        if (status == QProcess::CrashExit)
            emit finished(what_ + " was killed" + last, false);
        else
            emit finished(QString("%1 ended with exit status %2%3").arg(what_).arg(code).arg(last),
                          code == 0);
    });
}

RunController::~RunController() {
    if (!running()) return;
    stop();
    if (!process_.waitForFinished(10000)) process_.kill();
}

bool RunController::start(const QStringList& arguments, const QString& output, QString* error) {
    if (running()) {
        *error = "a recording is already running";
        return false;
    }
    output_ = output;
    errors_.clear();
    announced_ = false;
    before_ = QFileInfo(output).exists() ? QFileInfo(output).lastModified() : QDateTime();
    what_ = "loaderlens " + arguments.value(0);
    process_.start(cli_program(), arguments);
    if (!process_.waitForStarted(5000)) {
        *error = "Cannot start " + cli_program() + ": " + process_.errorString();
        return false;
    }
    wait_for_file_.start();
    return true;
}

void RunController::stop() {
    if (running() && process_.processId() > 0)
        ::kill(static_cast<pid_t>(process_.processId()), SIGINT);
}

} // namespace loaderlens::gui
