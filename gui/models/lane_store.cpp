// SPDX-License-Identifier: MIT
#include "lane_store.hpp"

#include <algorithm>

namespace loaderlens::gui {

std::optional<LaneKey> LaneStore::lane_of(const ProcessInfo& process) {
    switch (process.role) {
    case Role::main:
        return LaneKey::main_lane(process.part);
    case Role::worker:
        if (process.slot < 0) return LaneKey::helper_lane(process.part);
        return LaneKey::worker(process.slot, process.part);
    case Role::helper:
        return LaneKey::helper_lane(process.part);
    }
    return std::nullopt;
}

void LaneStore::reset() {
    series_.clear();
    peaks_.clear();
    stack_.clear();
    stack_index_.clear();
    summed_lane_.clear();
    part_end_ms_.clear();
    parts_in_tick_.clear();
    last_ms_ = 0;
}

void LaneStore::add(const LaneKey& lane, Figure figure, std::int64_t t_ms, const Kib& value) {
    if (!value) return; // unavailable: left out of the sum, as series() does
    auto& points = series_[lane][figure];
    // One tier run's rows share their t_ms and are contiguous: a lane's sum at a tick is built
    // by adding to the last point while the tick is the same.
    if (!points.empty() && points.back().t_ms == t_ms)
        points.back().kib = saturating_add(points.back().kib, *value);
    else
        points.push_back({t_ms, *value});
    if (t_ms > last_ms_) last_ms_ = t_ms;
    std::int64_t& peak = peaks_[{lane, figure}];
    peak = std::max(peak, points.back().kib);
}

std::int64_t LaneStore::peak(const LaneKey& lane, Figure figure) const {
    auto it = peaks_.find({lane, figure});
    return it == peaks_.end() ? 0 : it->second;
}

void LaneStore::start_stack_tick(std::int64_t t, int part) {
    if (!stack_.empty() && stack_.back().t_ms == t && parts_in_tick_.contains(part)) return;
    if (stack_.empty() || stack_.back().t_ms != t) {
        // An ordinary recording's rollup tick reads every process: each lane starts from 0. A
        // merged one's parts tick apart: the other parts' lanes keep their latest PSS until
        // their part's run ends, so that the stack is the job's, not one node's at a time; a
        // part that ended since the last tick drops out at its end (a tick of its own there).
        if (!part_end_ms_.empty() && !stack_.empty()) {
            std::set<std::int64_t> ends;
            for (const auto& [id, end] : part_end_ms_)
                if (end >= stack_.back().t_ms && end + 1 < t) ends.insert(end + 1);
            for (const std::int64_t end : ends)
                push_carried_tick(end);
            push_carried_tick(t);
        } else {
            stack_.push_back({t, {}});
        }
        parts_in_tick_.clear();
    }
    parts_in_tick_.insert(part);
    for (const auto& [key, index] : stack_index_) // this part's lanes are summed from its rows
        if (key.part == part && static_cast<std::size_t>(index) < stack_.back().pss_by_lane.size())
            stack_.back().pss_by_lane[static_cast<std::size_t>(index)] = 0;
}

void LaneStore::push_carried_tick(std::int64_t t) {
    StackTick tick{t, stack_.back().pss_by_lane};
    for (const auto& [key, index] : stack_index_) {
        auto end = part_end_ms_.find(key.part);
        if (end != part_end_ms_.end() && end->second < t &&
            static_cast<std::size_t>(index) < tick.pss_by_lane.size())
            tick.pss_by_lane[static_cast<std::size_t>(index)] = 0;
    }
    stack_.push_back(std::move(tick));
}

bool LaneStore::append(const RecordingData& newer,
                       const std::map<std::int64_t, ProcessInfo>& processes) {
    for (const RecordingPart& part : newer.parts)
        part_end_ms_[part.id] = saturating_add(part.offset_ms, part.duration_ms);
    for (const ProcessInfo& p : newer.processes) {
        auto summed = summed_lane_.find(p.id);
        if (summed != summed_lane_.end() && lane_of(p) != summed->second) return false;
    }
    auto lane_for = [&](std::int64_t process_id) -> std::optional<LaneKey> {
        auto known = summed_lane_.find(process_id);
        if (known != summed_lane_.end()) return known->second;
        auto process = processes.find(process_id);
        if (process == processes.end()) return std::nullopt; // a row without its process: skip
        auto lane = lane_of(process->second);
        if (lane) summed_lane_.emplace(process_id, *lane);
        return lane;
    };
    for (const auto& [t, sample] : newer.fast) {
        auto lane = lane_for(sample.process_id);
        if (!lane) continue;
        for (Figure f : figures)
            if (source_of(f) == FigureSource::fast) add(*lane, f, t, figure_of(sample, f));
    }
    for (const auto& [t, sample] : newer.rollup) {
        auto lane = lane_for(sample.process_id);
        if (!lane) continue;
        for (Figure f : figures)
            if (source_of(f) == FigureSource::rollup) add(*lane, f, t, figure_of(sample, f));
        if (!sample.pss) continue;
        const int index =
            stack_index_.try_emplace(*lane, static_cast<int>(stack_index_.size())).first->second;
        start_stack_tick(t, lane->part);
        auto& by_lane = stack_.back().pss_by_lane;
        if (static_cast<int>(by_lane.size()) <= index) by_lane.resize(index + 1, 0);
        by_lane[static_cast<std::size_t>(index)] =
            saturating_add(by_lane[static_cast<std::size_t>(index)], *sample.pss);
    }
    return true;
}

const std::vector<LanePoint>& LaneStore::points(const LaneKey& lane, Figure figure) const {
    static const std::vector<LanePoint> none;
    auto l = series_.find(lane);
    if (l == series_.end()) return none;
    auto f = l->second.find(figure);
    return f == l->second.end() ? none : f->second;
}

int LaneStore::lane_index(const LaneKey& lane) const {
    auto it = stack_index_.find(lane);
    return it == stack_index_.end() ? -1 : it->second;
}

std::vector<LaneKey> LaneStore::lanes() const {
    std::vector<LaneKey> out;
    for (const auto& [lane, by_figure] : series_)
        out.push_back(lane);
    return out;
}

} // namespace loaderlens::gui
