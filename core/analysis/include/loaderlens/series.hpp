// SPDX-License-Identifier: MIT
// Figures over time, as the report, the export, the diagnosis and the dashboard plot them: a
// figure for a selection of processes (one, a worker slot across its generations, a role, the
// whole tree), summed per tick of the tier that reads it, over a time range, decimated to at most
// so many points with each point's min and max kept (a plot then loses no peak).
#pragma once

#include "loaderlens/recording_data.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loaderlens {

// Each figure's source: docs/figures.md. KiB throughout.
enum class Figure {
    // fast tier (statm, status): per process, summed per fast tick
    rss,
    rss_anon,
    rss_file,
    rss_shmem,
    swap,
    rss_noshared, // RSS - RssFile - RssShmem (what SLURM's NoShared counts; at least 0)
    // rollup tier (smaps_rollup): per process, summed per rollup tick
    pss,
    uss,
    pss_anon,
    pss_file,
    pss_shmem,
    swap_pss,
    private_dirty,
    locked,
    // cgroup tier: the recorder's memory cgroup (the selector does not apply)
    cgroup_usage,
    cgroup_anon,
    cgroup_file,
    cgroup_shmem,
    // system tier: /proc/meminfo and /dev/shm (the selector does not apply)
    mem_available,
    page_cache,
    system_shmem,
    dirty,
    writeback,
    active_file,
    inactive_file,
    kreclaimable,
    devshm_used,
};

enum class FigureSource { fast, rollup, cgroup, system };
FigureSource source_of(Figure figure);
std::string_view to_string(Figure figure);
std::optional<Figure> figure_from_string(std::string_view name);

struct Selector {
    enum class Kind { tree, process, slot, role };
    Kind kind = Kind::tree;
    std::int64_t process_id = 0; // Kind::process
    int slot = -1;               // Kind::slot: the workers that held it, every generation
    Role role = Role::worker;    // Kind::role
    static Selector tree() { return {}; }
    static Selector process(std::int64_t id) { return {Kind::process, id}; }
    static Selector worker_slot(int slot) { return {Kind::slot, 0, slot}; }
    static Selector of_role(Role role) { return {Kind::role, 0, -1, role}; }
    bool selects(const ProcessInfo& process) const;
};

struct SeriesQuery {
    Figure figure = Figure::rss;
    Selector selector;
    std::int64_t from_ms = std::numeric_limits<std::int64_t>::min();
    std::int64_t to_ms = std::numeric_limits<std::int64_t>::max(); // inclusive
    std::size_t max_points = 0;                                    // 0: every tick
};

struct SeriesPoint {
    std::int64_t t_ms = 0; // the tick (decimated: the first tick of the span)
    Kib value;             // the sum at the tick (decimated: at the span's last tick)
    Kib min, max;          // over the ticks the point stands for (one tick: = value)
    // A selected process's figure was unavailable at the tick (or at one of the span's): the
    // sum leaves it out. All of them unavailable: value is empty, never 0.
    bool partial = false;
};

struct Series {
    Figure figure = Figure::rss;
    std::vector<SeriesPoint> points; // in time order
    // The highest value and its tick (over every tick in the range, before decimation).
    Kib peak;
    std::int64_t peak_ms = 0;
};

// The one computation of a per-tick sum: every consumer (report, scheduler views, GUI lanes and
// stack, exports) reads its sums from here. `tops`, when given (and max_points is 0), gets for
// each point the selected process that held the most of the figure at that tick (0: none).
struct TickTop {
    std::int64_t process_id = 0;
    Kib kb;
};
Series series(const RecordingData& data, const SeriesQuery& query,
              std::vector<TickTop>* tops = nullptr);
// Each process's figure at one tick of its tier, as series() counts it there (the same carry of
// rollup readings): who held what at a peak. An unavailable figure has an empty kb.
std::vector<TickTop> values_at_tick(const RecordingData& data, Figure figure, std::int64_t t_ms);

// The processes that make some tick of Σ PSS or Σ USS partial: noted unreadable by the rollup
// tier, never read by it, and alive at a rollup tick after the note; or with a rollup row that
// lacks the figure and has no reading to carry (RollupCarry). The report's count of unreadable
// processes is this one (a process whose read failed as it died, with no tick after, leaves
// every sum complete).
std::vector<std::int64_t> pss_unreadable_processes(const RecordingData& data);

// A rollup figure of one process after another in time order. A composite row (its PSS computed
// at the sample, the rest a kept reading) has no clean/dirty split: for USS, Private_Dirty and the
// like it gives the process's last reading of the figure, carried, with its age at this row.
class RollupCarry {
  public:
    explicit RollupCarry(Figure figure) : figure_(figure) {}
    struct Value {
        Kib kb;
        std::int64_t age_ms = 0; // how old the reading is at this row
        bool carried = false;    // from an earlier row
    };
    Value next(std::int64_t t_ms, const RollupSample& row);

  private:
    struct Reading {
        std::int64_t t_ms = 0, kb = 0, age_ms = 0;
    };
    Figure figure_;
    std::unordered_map<std::int64_t, Reading> last_; // by process id
};

// One row's figure: a fast-tier figure of a fast row, a rollup-tier figure of a rollup row
// (another tier's figure: unavailable).
Kib figure_of(const FastSample& sample, Figure figure);
Kib figure_of(const RollupSample& sample, Figure figure);

} // namespace loaderlens
