// SPDX-License-Identifier: MIT
// The recording the dashboard shows: opened through core's reading engine (Recording, one reader
// for a finished file and one still being written), followed with a cursor while its recorder
// writes (only the new rows are read; nothing is re-read), with the lanes, per-lane series and
// the report (findings, scheduler views) the views draw from. Never reads /proc.
//
// Opening reads the rows on a worker thread and hands them to the GUI thread (first paint); the
// report, which needs every row again, is built on a second thread with its own reader, so a
// large recording paints before its diagnosis is done. While a recording is followed, the report
// is rebuilt at most every max(30 s, 100 x its last cost): following stays cheap however long
// the run (docs/gui.md).
#pragma once

#include "lane_store.hpp"
#include "loaderlens/lanes.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>
#include <sys/types.h>

namespace loaderlens::gui {

class RecordingDocument : public QObject {
    Q_OBJECT
  public:
    enum class State { none, loading, live, finished, interrupted, cut, deleted, failed };

    explicit RecordingDocument(QObject* parent = nullptr);
    ~RecordingDocument() override;

    // Opens `path` and reads it before returning (tests, --screenshot); false: see error().
    bool open_now(const QString& path);
    // Opens on a worker thread: opened() or failed() follows; then report_ready().
    void open(const QString& path);
    void close();
    // How often a recording being written is looked at (default 500 ms: 2 Hz).
    void set_follow_interval(int ms);
    // One look at a followed recording (what the follow timer does): true if rows came.
    bool poll();
    // Waits (processing events) until the report of what was read is built; false on timeout or
    // when it cannot be built (report_error(): at once, as `report` refuses the file).
    bool wait_for_report(int timeout_ms);

    const QString& path() const { return path_; }
    State state() const { return state_; }
    // One line for the status bar: live, finished, interrupted (which signal), cut (when).
    QString state_text() const;
    // The last error (cannot open, cannot read more, deleted while followed): one line.
    const QString& error() const { return error_; }
    // Why the last report could not be built, as `report` says it (one line); empty otherwise.
    const QString& report_error() const { return report_error_; }
    bool has_data() const { return has_data_; }

    const RecordingData& data() const { return data_; }
    const Lanes& lanes() const { return lanes_; }
    const LaneStore& store() const { return store_; }
    const std::map<std::int64_t, ProcessInfo>& processes() const { return processes_; }
    // Null until the first report is built.
    const ReportData* report() const { return report_.get(); }
    // The recording's length so far: its end, or its last sample.
    std::int64_t duration_ms() const;
    // What a report build cost last (ms), and how many reads brought rows (for the benchmark).
    std::int64_t last_report_cost_ms() const { return last_report_cost_ms_; }
    int reads() const { return reads_; }

  signals:
    void opened();
    void grew();
    void report_ready();
    void state_changed();
    void failed(const QString& message);

  public:
    struct Opened; // what the worker thread hands over

  private:
    void adopt(std::shared_ptr<Opened> result, int generation);
    void absorb(RecordingData&& newer);
    void update_state(const RecordingEnd& end);
    void set_state(State state);
    void start_report();
    void maybe_rebuild_report();
    void fail(const QString& message, State state = State::failed);
    bool file_replaced() const;

    QString path_;
    QString error_;
    QString report_error_;
    State state_ = State::none;
    bool has_data_ = false;
    int generation_ = 0; // a result of an older open() or report is dropped
    std::unique_ptr<Recording> recording_;
    Cursor cursor_;
    RecordingData data_;
    Lanes lanes_;
    LaneStore store_;
    std::map<std::int64_t, ProcessInfo> processes_;
    std::shared_ptr<const ReportData> report_;
    std::optional<RecordingEnd> end_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    QTimer follow_;
    bool report_running_ = false, report_stale_ = false;
    QElapsedTimer since_report_;
    std::int64_t last_report_cost_ms_ = 0;
    int reads_ = 0;
};

QString to_text(RecordingDocument::State state);

} // namespace loaderlens::gui
