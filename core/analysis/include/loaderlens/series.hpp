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

Series series(const RecordingData& data, const SeriesQuery& query);

// One row's figure: a fast-tier figure of a fast row, a rollup-tier figure of a rollup row
// (another tier's figure: unavailable).
Kib figure_of(const FastSample& sample, Figure figure);
Kib figure_of(const RollupSample& sample, Figure figure);

} // namespace loaderlens
