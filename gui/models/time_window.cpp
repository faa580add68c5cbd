// SPDX-License-Identifier: MIT
#include "time_window.hpp"

#include <algorithm>
#include <cmath>
#include <QString>

namespace loaderlens::gui {

TimeWindow::TimeWindow(QObject* parent) : QObject(parent) {}

void TimeWindow::set_range(double from_s, double to_s) {
    if (!std::isfinite(from_s) || !std::isfinite(to_s)) return;
    if (to_s < from_s) std::swap(from_s, to_s);
    const double span = std::max(to_s - from_s, 0.01);
    from_s = std::clamp(from_s, 0.0, std::max(0.0, duration_s_ - 0.01));
    to_s = std::min(from_s + span, std::max(duration_s_, from_s + 0.01));
    whole_ = from_s <= 0 && to_s >= duration_s_;
    if (from_s == from_s_ && to_s == to_s_) return;
    from_s_ = from_s;
    to_s_ = to_s;
    emit range_changed(from_s_, to_s_);
}

void TimeWindow::show_all() {
    whole_ = true;
    if (from_s_ == 0 && to_s_ == duration_s_) return;
    from_s_ = 0;
    to_s_ = duration_s_;
    emit range_changed(from_s_, to_s_);
}

void TimeWindow::set_duration(double duration_s) {
    duration_s_ = std::max(duration_s, 0.01);
    if (whole_)
        show_all();
    else if (to_s_ > duration_s_)
        set_range(from_s_, duration_s_);
}

void TimeWindow::set_cursor(double t_s) {
    if (t_s == cursor_s_) return;
    cursor_s_ = t_s;
    emit cursor_changed(t_s);
}

Selection::Selection(QObject* parent) : QObject(parent) {}

void Selection::set(qlonglong process_id, int slot, const QString& file) {
    if (process_id == process_id_ && slot == slot_ && file == file_) return;
    process_id_ = process_id;
    slot_ = slot;
    file_ = file;
    emit changed();
}

} // namespace loaderlens::gui
