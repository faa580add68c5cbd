// SPDX-License-Identifier: MIT
#include "recording_document.hpp"

#include "display_text.hpp"
#include "loaderlens/sibling_tasks.hpp"

#include <algorithm>
#include <QCoreApplication>
#include <QEventLoop>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <sys/stat.h>

namespace loaderlens::gui {

struct RecordingDocument::Opened {
    std::unique_ptr<Recording> recording;
    Cursor cursor;
    RecordingData data;
    // Summed on the worker thread too: the GUI thread only takes them (first paint).
    std::map<std::int64_t, ProcessInfo> processes;
    LaneStore store;
    Lanes lanes;
    RecordingEnd end;
    QString error;
    dev_t device = 0;
    ino_t inode = 0;
};

namespace {

using Opened = RecordingDocument::Opened;

std::shared_ptr<Opened> read_recording(const QString& path) {
    auto out = std::make_shared<Opened>();
    try {
        struct stat st {};
        // The file it opened: a later stat() that differs means it was deleted or replaced.
        if (::stat(path.toLocal8Bit().constData(), &st) == 0) {
            out->device = st.st_dev;
            out->inode = st.st_ino;
        }
        out->recording = std::make_unique<Recording>(path.toStdString());
        out->data = out->recording->read_new(out->cursor);
        for (const ProcessInfo& p : out->data.processes)
            out->processes[p.id] = p;
        out->store.append(out->data, out->processes);
        out->lanes = lanes(out->data);
        out->end = out->recording->end();
    } catch (const std::exception& e) {
        out->recording.reset();
        out->error = recorded_text(e.what(), 1000);
    }
    return out;
}

struct BuiltReport {
    std::shared_ptr<const ReportData> report;
    QString error;
    std::int64_t cost_ms = 0;
};

// A reader of its own (Recording is one thread's at a time) reads every row and diagnoses them.
BuiltReport build_report_of(const QString& path) {
    BuiltReport out;
    QElapsedTimer timer;
    timer.start();
    try {
        Recording recording(path.toStdString());
        // The step's other tasks on the node, found beside it as `report` finds them.
        DiagnosisOptions options;
        find_sibling_tasks(recording, options);
        out.report = std::make_shared<const ReportData>(build_report(recording, options));
    } catch (const std::exception& e) {
        out.error = recorded_text(e.what(), 1000);
    }
    out.cost_ms = timer.elapsed();
    return out;
}

} // namespace

QString to_text(RecordingDocument::State state) {
    using S = RecordingDocument::State;
    switch (state) {
    case S::none:
        return "no recording";
    case S::loading:
        return "loading";
    case S::live:
        return "live";
    case S::finished:
        return "finished";
    case S::interrupted:
        return "interrupted";
    case S::cut:
        return "cut";
    case S::deleted:
        return "deleted";
    case S::failed:
        return "unreadable";
    }
    return "?";
}

RecordingDocument::RecordingDocument(QObject* parent) : QObject(parent) {
    follow_.setInterval(500);
    connect(&follow_, &QTimer::timeout, this, [this] { poll(); });
}

RecordingDocument::~RecordingDocument() = default;

void RecordingDocument::set_follow_interval(int ms) {
    follow_.setInterval(std::max(50, ms));
}

void RecordingDocument::close() {
    ++generation_;
    follow_.stop();
    recording_.reset();
    cursor_ = {};
    data_ = {};
    lanes_ = {};
    store_.reset();
    processes_.clear();
    report_.reset();
    end_.reset();
    has_data_ = false;
    report_running_ = report_stale_ = false;
    error_.clear();
    report_error_.clear();
    path_.clear();
    set_state(State::none);
}

bool RecordingDocument::open_now(const QString& path) {
    close();
    path_ = path;
    set_state(State::loading);
    adopt(read_recording(path), generation_);
    return state_ != State::failed;
}

void RecordingDocument::open(const QString& path) {
    close();
    path_ = path;
    set_state(State::loading);
    const int generation = generation_;
    auto* watcher = new QFutureWatcher<std::shared_ptr<Opened>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
        adopt(watcher->result(), generation);
        watcher->deleteLater();
    });
    watcher->setFuture(QtConcurrent::run([path] { return read_recording(path); }));
}

void RecordingDocument::adopt(std::shared_ptr<Opened> result, int generation) {
    if (generation != generation_) return; // another file was opened since
    if (!result->recording) {
        fail(result->error);
        return;
    }
    recording_ = std::move(result->recording);
    cursor_ = std::move(result->cursor);
    device_ = result->device;
    inode_ = result->inode;
    has_data_ = true;
    data_ = std::move(result->data);
    processes_ = std::move(result->processes);
    store_ = std::move(result->store);
    lanes_ = std::move(result->lanes);
    update_state(result->end);
    emit opened();
    start_report();
}

void RecordingDocument::absorb(RecordingData&& newer) {
    for (const ProcessInfo& p : newer.processes)
        processes_[p.id] = p;
    if (store_.append(newer, processes_)) {
        data_.append(std::move(newer));
    } else { // a process changed lanes: sum every row again
        data_.append(std::move(newer));
        store_.reset();
        store_.append(data_, processes_);
    }
    lanes_ = loaderlens::lanes(data_);
}

void RecordingDocument::update_state(const RecordingEnd& end) {
    end_ = end;
    State next = State::finished;
    switch (end.state) {
    case RecordingEnd::State::being_written:
        next = State::live;
        break;
    case RecordingEnd::State::cut:
        next = State::cut;
        break;
    case RecordingEnd::State::finished: {
        auto state = data_.meta.find("state");
        next = state != data_.meta.end() && state->second == "interrupted" ? State::interrupted
                                                                           : State::finished;
        break;
    }
    }
    if (next == State::live && !follow_.isActive()) follow_.start();
    if (next != State::live) follow_.stop();
    if (next != state_) {
        const bool ended = state_ == State::live;
        set_state(next);
        if (ended) start_report(); // the final figures: rebuilt once the writer is done
    }
}

void RecordingDocument::set_state(State state) {
    if (state == state_) return;
    state_ = state;
    emit state_changed();
}

void RecordingDocument::fail(const QString& message, State state) {
    follow_.stop();
    error_ = message;
    set_state(state);
    emit failed(message);
}

bool RecordingDocument::file_replaced() const {
    struct stat st {};
    if (::stat(path_.toLocal8Bit().constData(), &st) != 0) return true;
    return st.st_dev != device_ || st.st_ino != inode_;
}

bool RecordingDocument::poll() {
    if (!recording_ || state_ != State::live) return false;
    if (file_replaced()) {
        fail(path_ + " was deleted or replaced while it was followed: the last data read is shown",
             State::deleted);
        return false;
    }
    bool came = false;
    try {
        if (recording_->has_new(cursor_)) {
            RecordingData newer = recording_->read_new(cursor_);
            if (!newer.empty()) {
                ++reads_;
                absorb(std::move(newer));
                came = true;
            }
        }
        update_state(recording_->end());
    } catch (const std::exception& e) {
        fail(recorded_text(e.what(), 1000) + " (the last data read is shown)");
        return came;
    }
    if (came) {
        emit grew();
        maybe_rebuild_report();
    }
    return came;
}

void RecordingDocument::maybe_rebuild_report() {
    // A report costs O(rows) (0.3 s for 10 min x 32 workers, 1.6 s for 1 h): at most 1% of a
    // core on it, and at most every 30 s (the plots follow at 2 Hz; findings need not).
    const std::int64_t wait_ms = std::max<std::int64_t>(30000, 100 * last_report_cost_ms_);
    if (report_running_) {
        report_stale_ = true;
        return;
    }
    if (!since_report_.isValid() || since_report_.elapsed() >= wait_ms) start_report();
}

void RecordingDocument::start_report() {
    if (report_running_) {
        report_stale_ = true;
        return;
    }
    report_running_ = true;
    report_stale_ = false;
    since_report_.start();
    const int generation = generation_;
    auto* watcher = new QFutureWatcher<BuiltReport>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
        BuiltReport built = watcher->result();
        watcher->deleteLater();
        if (generation != generation_) return;
        report_running_ = false;
        last_report_cost_ms_ = built.cost_ms;
        report_error_ = built.report ? QString() : built.error;
        if (built.report) {
            report_ = std::move(built.report);
            emit report_ready();
        } else {
            // The rows are shown; only the diagnosis is missing. Said once, in the window.
            error_ = "no report: " + built.error;
            emit failed(error_);
        }
        // Rows or an end came while it was built: the final report must include them.
        if (report_stale_ && state_ != State::live) start_report();
    });
    watcher->setFuture(QtConcurrent::run([path = path_] { return build_report_of(path); }));
}

bool RecordingDocument::wait_for_report(int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    // A report that failed is the answer: waiting longer would not change it.
    while ((report_running_ || (!report_ && has_data_ && report_error_.isEmpty())) &&
           timer.elapsed() < timeout_ms) {
        // Sleeps until an event (the report's) or 20 ms: processEvents() alone would spin a core
        // while the report is built on the other.
        QEventLoop loop;
        QTimer::singleShot(20, &loop, &QEventLoop::quit);
        loop.exec();
    }
    return report_ != nullptr && !report_running_;
}

std::int64_t RecordingDocument::duration_ms() const {
    std::int64_t out = std::max<std::int64_t>(0, store_.last_ms());
    if (end_) {
        out = std::max(out, end_->last_sample_ms);
        if (end_->end_ms) out = std::max(out, *end_->end_ms);
    }
    if (report_) out = std::max(out, report_->duration_ms);
    return out;
}

QString RecordingDocument::state_text() const {
    auto seconds = [](std::int64_t ms) { return QString::number(ms / 1000.0, 'f', 1) + " s"; };
    switch (state_) {
    case State::live:
        return QString("live: being written (recorder PID %1), %2 so far")
            .arg(end_ && end_->writer_pid ? QString::number(*end_->writer_pid) : "?")
            .arg(seconds(duration_ms()));
    case State::finished:
        return "finished, " + seconds(duration_ms());
    case State::interrupted:
        return QString("interrupted%1, %2")
            .arg(end_ && end_->signal ? " by " + recorded_text(*end_->signal) : "")
            .arg(seconds(duration_ms()));
    case State::cut:
        return QString("cut: the recorder stopped without finishing after %1%2")
            .arg(seconds(end_ ? std::max<std::int64_t>(0, end_->last_sample_ms) : 0))
            .arg(end_ && end_->signal ? " (" + recorded_text(*end_->signal) + ")"
                                      : " (killed outright)");
    case State::deleted:
        return "deleted while followed: the last data read is shown";
    case State::failed:
        if (has_data_) return "unreadable from here on: the last data read is shown";
        break;
    case State::none:
    case State::loading:
        break;
    }
    return to_text(state_);
}

} // namespace loaderlens::gui
