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
    unavailable_at_.clear();
    stack_.clear();
    stack_index_.clear();
    summed_lane_.clear();
    part_end_ms_.clear();
    pss_unreadable_from_.clear();
    rss_unreadable_from_.clear();
    carries_.clear();
    parts_in_tick_.clear();
    last_ms_ = 0;
}

void LaneStore::add(const LaneKey& lane, Figure figure, std::int64_t t_ms, const Kib& value) {
    auto& points = series_[lane][figure];
    if (!value) { // unavailable: left out of the sum, the point partial, as series() does
        if (!points.empty() && points.back().t_ms == t_ms)
            points.back().partial = true;
        else
            unavailable_at_[{lane, figure}] = t_ms;
        return;
    }
    // One tier run's rows share their t_ms and are contiguous: a lane's sum at a tick is built
    // by adding to the last point while the tick is the same.
    if (!points.empty() && points.back().t_ms == t_ms) {
        points.back().kib = saturating_add(points.back().kib, *value);
    } else {
        auto before = unavailable_at_.find({lane, figure});
        points.push_back({t_ms, *value, before != unavailable_at_.end() && before->second == t_ms});
    }
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
    for (const auto& [key, index] : stack_index_) { // this part's lanes are summed from its rows
        const auto i = static_cast<std::size_t>(index);
        if (key.part != part) continue;
        if (i < stack_.back().pss_by_lane.size()) stack_.back().pss_by_lane[i] = 0;
        if (i < stack_.back().unknown_by_lane.size()) stack_.back().unknown_by_lane[i] = 0;
    }
}

void LaneStore::push_carried_tick(std::int64_t t) {
    StackTick tick{t, stack_.back().pss_by_lane};
    for (const auto& [key, index] : stack_index_) {
        auto end = part_end_ms_.find(key.part);
        const auto i = static_cast<std::size_t>(index);
        if (end == part_end_ms_.end() || end->second >= t) continue;
        if (i < tick.pss_by_lane.size()) tick.pss_by_lane[i] = 0;
        if (i < tick.unknown_by_lane.size()) tick.unknown_by_lane[i] = 0;
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
    for (const auto& [t, u] : newer.unavailable) {
        if (u.process_id <= 0) continue;
        if (u.tier == "rollup") pss_unreadable_from_.try_emplace(u.process_id, t);
        if (u.tier == "fast") rss_unreadable_from_.try_emplace(u.process_id, t);
    }
    // A tick already in the stack may get more rows of its own from this read.
    const std::size_t first_tick = stack_.empty() ? 0 : stack_.size() - 1;
    for (const auto& [t, sample] : newer.rollup) {
        auto lane = lane_for(sample.process_id);
        if (!lane) continue;
        for (Figure f : figures)
            if (source_of(f) == FigureSource::rollup)
                add(*lane, f, t, carries_.try_emplace(f, f).first->second.next(t, sample).kb);
        const int index =
            stack_index_.try_emplace(*lane, static_cast<int>(stack_index_.size())).first->second;
        start_stack_tick(t, lane->part);
        const auto i = static_cast<std::size_t>(index);
        if (!sample.pss) { // not read: the lane is unknown at this tick, never 0
            auto& unknown = stack_.back().unknown_by_lane;
            if (unknown.size() <= i) unknown.resize(i + 1, 0);
            unknown[i] = 1;
            continue;
        }
        auto& by_lane = stack_.back().pss_by_lane;
        if (by_lane.size() <= i) by_lane.resize(i + 1, 0);
        by_lane[i] = saturating_add(by_lane[i], *sample.pss);
    }
    mark_unreadable(first_tick, processes);
    mark_partial(rss_unreadable_from_, FigureSource::fast, processes);
    mark_partial(pss_unreadable_from_, FigureSource::rollup, processes);
    return true;
}

void LaneStore::mark_partial(const std::map<std::int64_t, std::int64_t>& unreadable,
                             FigureSource source,
                             const std::map<std::int64_t, ProcessInfo>& processes) {
    // Rare (another user's processes): every point of the lane is looked at again.
    for (const auto& [id, from] : unreadable) {
        auto process = processes.find(id);
        if (process == processes.end()) continue;
        const auto lane = lane_of(process->second);
        auto by_figure = lane ? series_.find(*lane) : series_.end();
        if (by_figure == series_.end()) continue;
        const auto& exit = process->second.exit_ms;
        for (auto& [figure, points] : by_figure->second)
            if (source_of(figure) == source)
                for (LanePoint& p : points)
                    if (p.t_ms >= from && (!exit || p.t_ms <= *exit)) p.partial = true;
    }
}

void LaneStore::mark_unreadable(std::size_t first,
                                const std::map<std::int64_t, ProcessInfo>& processes) {
    for (const auto& [id, from] : pss_unreadable_from_) {
        auto process = processes.find(id);
        if (process == processes.end()) continue;
        const ProcessInfo& p = process->second;
        const auto lane = lane_of(p);
        if (!lane) continue;
        const auto index = static_cast<std::size_t>(
            stack_index_.try_emplace(*lane, static_cast<int>(stack_index_.size())).first->second);
        for (std::size_t k = first; k < stack_.size(); ++k) {
            StackTick& tick = stack_[k];
            if (tick.t_ms < from || tick.t_ms < p.birth_ms || (p.exit_ms && tick.t_ms > *p.exit_ms))
                continue;
            if (tick.unknown_by_lane.size() <= index) tick.unknown_by_lane.resize(index + 1, 0);
            tick.unknown_by_lane[index] = 1;
        }
    }
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
