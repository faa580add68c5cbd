// SPDX-License-Identifier: MIT
// The one time axis every view shares (Perfetto's model: one track per process on a shared axis):
// the visible range, the cursor, and the length of the recording. A plot that is zoomed or
// panned sets the range; every other plot follows its signal.
#pragma once

#include <QObject>

namespace loaderlens::gui {

class TimeWindow : public QObject {
    Q_OBJECT
  public:
    explicit TimeWindow(QObject* parent = nullptr);

    double from_s() const { return from_s_; }
    double to_s() const { return to_s_; }
    double cursor_s() const { return cursor_s_; }
    double duration_s() const { return duration_s_; }
    // Whether the range shows the whole recording (it then grows with a followed recording).
    bool whole() const { return whole_; }

    // Clamped to [0, duration]; a range narrower than 10 ms is widened.
    void set_range(double from_s, double to_s);
    void show_all();
    // The recording grew (or was opened): a range showing the whole of it keeps doing so.
    void set_duration(double duration_s);
    void set_cursor(double t_s);

  signals:
    void range_changed(double from_s, double to_s);
    void cursor_changed(double t_s);

  private:
    double from_s_ = 0, to_s_ = 1, cursor_s_ = -1, duration_s_ = 1;
    bool whole_ = true;
};

// What the user picked in one view and every view highlights: a process, a worker slot, a file.
class Selection : public QObject {
    Q_OBJECT
  public:
    explicit Selection(QObject* parent = nullptr);
    qlonglong process_id() const { return process_id_; } // 0: none
    int slot() const { return slot_; }                   // -1: none
    const QString& file() const { return file_; }
    void set(qlonglong process_id, int slot, const QString& file);
    void clear() { set(0, -1, {}); }

  signals:
    void changed();

  private:
    qlonglong process_id_ = 0;
    int slot_ = -1;
    QString file_;
};

} // namespace loaderlens::gui
