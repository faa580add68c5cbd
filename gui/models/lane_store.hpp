// SPDX-License-Identifier: MIT
// Per-lane series for the dashboard, kept up to date as a followed recording grows: each worker
// slot (every generation), the main process and the helpers, each figure summed per tick of the
// tier that reads it. One pass over the new rows per read (series() would pass over every row of
// the recording once per lane and figure: 32 slots x 10 figures x 2 M rows at each redraw).
// The sums are series()'s (tests/gui compares them on real replays).
#pragma once

#include "loaderlens/recording_data.hpp"
#include "loaderlens/series.hpp"

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace loaderlens::gui {

struct LaneKey {
    enum class Kind { main, worker, helpers };
    Kind kind = Kind::main;
    int slot = -1; // workers only
    int part = 0;  // a merged recording's part (node): its lanes are its own; 0 otherwise
    auto operator<=>(const LaneKey&) const = default;
    static LaneKey main_lane(int part = 0) { return {Kind::main, -1, part}; }
    static LaneKey worker(int slot, int part = 0) { return {Kind::worker, slot, part}; }
    static LaneKey helper_lane(int part = 0) { return {Kind::helpers, -1, part}; }
};

struct LanePoint {
    std::int64_t t_ms = 0;
    std::int64_t kib = 0;
    // One of the lane's processes had the figure unavailable at the tick: the sum leaves it out
    // (series()'s partial point).
    bool partial = false;
};

// Every lane's PSS at one rollup tick (the Workers view's stack): by lane index (lane_index()),
// 0 where the lane had no process sampled at that tick. A lane with a process whose PSS could
// not be read there is unknown (unknown_by_lane), never 0: the tick's Σ PSS is then partial, as
// `report` says, and the stack leaves a gap.
struct StackTick {
    std::int64_t t_ms = 0;
    std::vector<std::int64_t> pss_by_lane;
    std::vector<char> unknown_by_lane; // by lane index, as pss_by_lane (shorter: known)
    bool unknown(std::size_t lane) const {
        return lane < unknown_by_lane.size() && unknown_by_lane[lane];
    }
    bool partial() const {
        for (char u : unknown_by_lane)
            if (u) return true;
        return false;
    }
};

class LaneStore {
  public:
    // The figures a lane plots (fast tier first, then rollup).
    static constexpr std::array<Figure, 10> figures{
        Figure::rss, Figure::rss_anon,      Figure::rss_file, Figure::rss_shmem, Figure::pss,
        Figure::uss, Figure::private_dirty, Figure::pss_anon, Figure::pss_file,  Figure::pss_shmem};

    // Adds what a read brought. `processes` is every process known so far (by id), newer rows
    // included. Returns false, adding nothing, when a process already summed changed lanes (the
    // tracker re-classified it): the caller then rebuilds from all rows with reset() + append().
    bool append(const RecordingData& newer, const std::map<std::int64_t, ProcessInfo>& processes);
    void reset();

    // Points of one lane's figure in time order (a tick where none of its processes had the
    // figure available has no point); empty if the lane never had one.
    const std::vector<LanePoint>& points(const LaneKey& lane, Figure figure) const;
    std::vector<LaneKey> lanes() const;
    // The highest value of a lane's figure over the whole recording (0: none): plots share a
    // scale that does not jump as one zooms or scrolls.
    std::int64_t peak(const LaneKey& lane, Figure figure) const;
    std::int64_t last_ms() const { return last_ms_; }
    // The rollup ticks in time order, each with every lane's PSS: a stacked plot reads the ticks
    // of its range without merging 34 series at each redraw. In a merged recording the parts'
    // ticks differ: a tick holds the other parts' lanes as at their latest tick, while they ran.
    const std::vector<StackTick>& stack() const { return stack_; }
    // A lane's index in StackTick::pss_by_lane, -1 if it never had a rollup row.
    int lane_index(const LaneKey& lane) const;

  private:
    static std::optional<LaneKey> lane_of(const ProcessInfo& process);
    void add(const LaneKey& lane, Figure figure, std::int64_t t_ms, const Kib& value);
    // Makes the last stack tick the one at `t` for `part`'s rows (a new tick, or the same one).
    void start_stack_tick(std::int64_t t, int part);
    // A merged recording: a tick at `t` holding the last tick's lanes, those of parts ended by
    // then at 0.
    void push_carried_tick(std::int64_t t);
    // Marks the lanes of unreadable processes alive at the ticks from `first` on as unknown.
    void mark_unreadable(std::size_t first, const std::map<std::int64_t, ProcessInfo>& processes);
    // Marks a lane's points partial at the ticks an unreadable process of it lived through
    // (series()'s rule: the tier writes no row for such a process).
    void mark_partial(const std::map<std::int64_t, std::int64_t>& unreadable, FigureSource source,
                      const std::map<std::int64_t, ProcessInfo>& processes);

    std::map<LaneKey, std::map<Figure, std::vector<LanePoint>>> series_;
    std::map<std::pair<LaneKey, Figure>, std::int64_t> peaks_;
    // A lane's figure unavailable in a row at this tick before the tick had a point.
    std::map<std::pair<LaneKey, Figure>, std::int64_t> unavailable_at_;
    std::vector<StackTick> stack_;
    std::map<LaneKey, int> stack_index_;
    std::map<std::int64_t, LaneKey> summed_lane_; // process id -> the lane its rows went to
    std::map<int, std::int64_t> part_end_ms_;     // merged recordings: when each part's run ended
    // Processes whose PSS could not be read (the recorder's rollup unavailability: another
    // user's, no CAP_SYS_PTRACE), from when: they have no rollup rows, and while they live their
    // lane is unknown at every stack tick, as `report` counts them (partial), never 0.
    std::map<std::int64_t, std::int64_t> pss_unreadable_from_;
    // The same for the fast tier: a lane's RSS points are partial while such a process lives.
    std::map<std::int64_t, std::int64_t> rss_unreadable_from_;
    // A composite rollup row has no USS nor clean/dirty split: the process's last reading is
    // carried, as series() carries it (RollupCarry), one per rollup figure.
    std::map<Figure, RollupCarry> carries_;
    std::set<int> parts_in_tick_; // the parts whose rows the last tick holds
    std::int64_t last_ms_ = 0;
};

} // namespace loaderlens::gui
