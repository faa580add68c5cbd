// SPDX-License-Identifier: MIT
#include "loaderlens/series.hpp"

#include "loaderlens/units.hpp"

#include <algorithm>
#include <array>
#include <unordered_set>

namespace loaderlens {

namespace {

struct FigureName {
    Figure figure;
    std::string_view name;
    FigureSource source;
};

constexpr std::array<FigureName, 27> figure_names{{
    {Figure::rss, "rss", FigureSource::fast},
    {Figure::rss_anon, "rss_anon", FigureSource::fast},
    {Figure::rss_file, "rss_file", FigureSource::fast},
    {Figure::rss_shmem, "rss_shmem", FigureSource::fast},
    {Figure::swap, "swap", FigureSource::fast},
    {Figure::rss_noshared, "rss_noshared", FigureSource::fast},
    {Figure::pss, "pss", FigureSource::rollup},
    {Figure::uss, "uss", FigureSource::rollup},
    {Figure::pss_anon, "pss_anon", FigureSource::rollup},
    {Figure::pss_file, "pss_file", FigureSource::rollup},
    {Figure::pss_shmem, "pss_shmem", FigureSource::rollup},
    {Figure::swap_pss, "swap_pss", FigureSource::rollup},
    {Figure::private_dirty, "private_dirty", FigureSource::rollup},
    {Figure::locked, "locked", FigureSource::rollup},
    {Figure::cgroup_usage, "cgroup_usage", FigureSource::cgroup},
    {Figure::cgroup_anon, "cgroup_anon", FigureSource::cgroup},
    {Figure::cgroup_file, "cgroup_file", FigureSource::cgroup},
    {Figure::cgroup_shmem, "cgroup_shmem", FigureSource::cgroup},
    {Figure::mem_available, "mem_available", FigureSource::system},
    {Figure::page_cache, "page_cache", FigureSource::system},
    {Figure::system_shmem, "system_shmem", FigureSource::system},
    {Figure::dirty, "dirty", FigureSource::system},
    {Figure::writeback, "writeback", FigureSource::system},
    {Figure::active_file, "active_file", FigureSource::system},
    {Figure::inactive_file, "inactive_file", FigureSource::system},
    {Figure::kreclaimable, "kreclaimable", FigureSource::system},
    {Figure::devshm_used, "devshm_used", FigureSource::system},
}};

const FigureName& entry(Figure figure) {
    return *std::find_if(figure_names.begin(), figure_names.end(),
                         [&](const FigureName& f) { return f.figure == figure; });
}

Kib fast_figure(const FastSample& s, Figure f) {
    switch (f) {
    case Figure::rss:
        return s.rss;
    case Figure::rss_anon:
        return s.rss_anon;
    case Figure::rss_file:
        return s.rss_file;
    case Figure::rss_shmem:
        return s.rss_shmem;
    case Figure::rss_noshared:
        if (!s.rss || !s.rss_file || !s.rss_shmem) return std::nullopt;
        return std::max<std::int64_t>(
            0, saturating_sub(saturating_sub(*s.rss, *s.rss_file), *s.rss_shmem));
    default:
        return s.swap;
    }
}

Kib rollup_figure(const RollupSample& s, Figure f) {
    switch (f) {
    case Figure::pss:
        return s.pss;
    case Figure::uss:
        return s.uss();
    case Figure::pss_anon:
        return s.pss_anon;
    case Figure::pss_file:
        return s.pss_file;
    case Figure::pss_shmem:
        return s.pss_shmem;
    case Figure::private_dirty:
        return s.private_dirty;
    case Figure::locked:
        return s.locked;
    default:
        return s.swap_pss;
    }
}

Kib cgroup_figure(const CgroupSample& s, Figure f) {
    switch (f) {
    case Figure::cgroup_usage:
        return s.usage;
    case Figure::cgroup_anon:
        return s.anon;
    case Figure::cgroup_file:
        return s.file;
    default:
        return s.shmem;
    }
}

Kib system_figure(const SystemSample& s, Figure f) {
    switch (f) {
    case Figure::mem_available:
        return s.mem_available;
    case Figure::page_cache:
        return s.cached;
    case Figure::system_shmem:
        return s.shmem;
    case Figure::dirty:
        return s.dirty;
    case Figure::writeback:
        return s.writeback;
    case Figure::active_file:
        return s.active_file;
    case Figure::inactive_file:
        return s.inactive_file;
    case Figure::kreclaimable:
        return s.kreclaimable;
    default:
        return s.devshm_used;
    }
}

// A process whose figures of a tier could not be read at all (another user's, no CAP_SYS_PTRACE),
// from when the recorder noted it until it exited: the tier writes no row for it, so a tick it
// lived through is partial, not complete. A process read at some sample is not one: a gap of a
// readable process (a read failing as it exits) is no unknown memory, and the report counts as
// unreadable only those with no reading at all (TreeTotals::rollup_unreadable).
struct Unreadable {
    std::int64_t process_id = 0, from_ms = 0, to_ms = INT64_MAX;
};

template <typename Row>
std::vector<Unreadable> unreadable_spans(const RecordingData& data, std::string_view tier,
                                         const std::vector<Timed<Row>>& rows) {
    std::unordered_map<std::int64_t, std::int64_t> noted;
    for (const auto& [t, u] : data.unavailable)
        if (u.process_id != 0 && u.tier == tier) noted.try_emplace(u.process_id, t);
    if (noted.empty()) return {};
    for (const auto& row : rows)
        if (row.sample.rss) noted.erase(row.sample.process_id);
    std::vector<Unreadable> out;
    for (const ProcessInfo& p : data.processes)
        if (auto it = noted.find(p.id); it != noted.end())
            out.push_back({p.id, it->second, p.exit_ms.value_or(INT64_MAX)});
    return out;
}

} // namespace

std::vector<std::int64_t> pss_unreadable_processes(const RecordingData& data) {
    std::vector<std::int64_t> out;
    auto note = [&](std::int64_t process_id) {
        if (std::find(out.begin(), out.end(), process_id) == out.end()) out.push_back(process_id);
    };
    for (const Unreadable& u : unreadable_spans(data, "rollup", data.rollup)) {
        const bool lived_through_a_tick =
            std::any_of(data.rollup.begin(), data.rollup.end(), [&](const auto& row) {
                return u.from_ms <= row.t_ms && row.t_ms <= u.to_ms;
            });
        if (lived_through_a_tick) note(u.process_id);
    }
    // A row without the figure (and no reading to carry): the series' own rule, RollupCarry.
    RollupCarry pss(Figure::pss), uss(Figure::uss);
    for (const auto& [t, row] : data.rollup) {
        const bool pss_missing = !pss.next(t, row).kb;
        const bool uss_missing = !uss.next(t, row).kb;
        if (pss_missing || uss_missing) note(row.process_id);
    }
    return out;
}

namespace {

// Per-process rows grouped by tick (one tier run's rows share a t_ms and are contiguous): the sum
// over the selected processes at each tick in range. `get` sees every row in order (it may keep
// state); a selected process noted unreadable makes a tick it lived through without a value of
// its own partial.
template <typename Row, typename Get>
std::vector<SeriesPoint> tick_sums(const std::vector<Timed<Row>>& rows,
                                   const std::unordered_set<std::int64_t>& selected,
                                   const SeriesQuery& q, Get get, std::vector<TickTop>* tops,
                                   const std::vector<Unreadable>& unreadable) {
    // The whole tree: every row counts, no lookup per row (a 1 h x 32-worker report sums 1.2 M).
    const bool whole_tree = q.selector.kind == Selector::Kind::tree;
    std::vector<SeriesPoint> out;
    std::vector<std::int64_t> valued; // processes with a value at this tick
    std::size_t i = 0;
    while (i < rows.size()) {
        const std::int64_t t = rows[i].t_ms;
        SeriesPoint point{t, {}, {}, {}, false};
        TickTop top;
        bool any = false;
        valued.clear();
        for (; i < rows.size() && rows[i].t_ms == t; ++i) {
            const Kib value = get(rows[i].sample, t);
            if (t < q.from_ms || t > q.to_ms ||
                (!whole_tree && !selected.contains(rows[i].sample.process_id)))
                continue;
            any = true;
            if (value) {
                point.value = saturating_add(point.value.value_or(0), *value);
                valued.push_back(rows[i].sample.process_id);
                if (!top.kb || *value > *top.kb) top = {rows[i].sample.process_id, value};
            } else {
                point.partial = true;
            }
        }
        if (!any) continue;
        for (const Unreadable& u : unreadable)
            if (u.from_ms <= t && t <= u.to_ms && (whole_tree || selected.contains(u.process_id)) &&
                std::find(valued.begin(), valued.end(), u.process_id) == valued.end())
                point.partial = true;
        point.min = point.max = point.value;
        out.push_back(point);
        if (tops) tops->push_back(top);
    }
    return out;
}

template <typename Row, typename Get>
std::vector<SeriesPoint> direct(const std::vector<Timed<Row>>& rows, const SeriesQuery& q,
                                Get get) {
    std::vector<SeriesPoint> out;
    for (const auto& [t, sample] : rows) {
        if (t < q.from_ms || t > q.to_ms) continue;
        const Kib value = get(sample);
        out.push_back({t, value, value, value, !value});
    }
    return out;
}

// Rows in time order: `get` sees each one up to the tick (it may keep state), the tick's are kept.
template <typename Row, typename Get>
std::vector<TickTop> rows_at_tick(const std::vector<Timed<Row>>& rows, std::int64_t t, Get get) {
    std::vector<TickTop> out;
    for (const auto& [row_t, sample] : rows) {
        if (row_t > t) break;
        const Kib value = get(sample, row_t);
        if (row_t == t) out.push_back({sample.process_id, value});
    }
    return out;
}

Kib lower(const Kib& a, const Kib& b) {
    return !a ? b : !b ? a : std::min(*a, *b);
}
Kib higher(const Kib& a, const Kib& b) {
    return !a ? b : !b ? a : std::max(*a, *b);
}

// At most `max_points` points, each standing for an equal span of ticks: min and max over the
// span, the value at its last tick, partial if any tick was.
std::vector<SeriesPoint> decimate(std::vector<SeriesPoint> points, std::size_t max_points) {
    if (max_points == 0 || points.size() <= max_points) return points;
    std::vector<SeriesPoint> out;
    out.reserve(max_points);
    for (std::size_t b = 0; b < max_points; ++b) {
        const std::size_t first = b * points.size() / max_points;
        const std::size_t end = (b + 1) * points.size() / max_points;
        if (first == end) continue;
        SeriesPoint p = points[first];
        for (std::size_t i = first + 1; i < end; ++i) {
            p.min = lower(p.min, points[i].min);
            p.max = higher(p.max, points[i].max);
            p.partial = p.partial || points[i].partial;
        }
        p.value = points[end - 1].value;
        out.push_back(p);
    }
    return out;
}

} // namespace

Kib figure_of(const FastSample& sample, Figure figure) {
    if (source_of(figure) != FigureSource::fast) return std::nullopt;
    return fast_figure(sample, figure);
}
Kib figure_of(const RollupSample& sample, Figure figure) {
    if (source_of(figure) != FigureSource::rollup) return std::nullopt;
    return rollup_figure(sample, figure);
}

RollupCarry::Value RollupCarry::next(std::int64_t t_ms, const RollupSample& row) {
    if (const Kib kb = rollup_figure(row, figure_)) {
        if (!row.pss_computed || figure_ == Figure::pss || figure_ == Figure::pss_file)
            last_[row.process_id] = {t_ms, *kb, row.age_ms};
        return {kb, row.age_ms, false};
    }
    if (!row.pss_computed) return {};
    auto it = last_.find(row.process_id);
    if (it == last_.end()) return {};
    return {it->second.kb, saturating_add(saturating_sub(t_ms, it->second.t_ms), it->second.age_ms),
            true};
}

FigureSource source_of(Figure figure) {
    return entry(figure).source;
}
std::string_view to_string(Figure figure) {
    return entry(figure).name;
}
std::optional<Figure> figure_from_string(std::string_view name) {
    for (const FigureName& f : figure_names)
        if (f.name == name) return f.figure;
    return std::nullopt;
}

bool Selector::selects(const ProcessInfo& p) const {
    switch (kind) {
    case Kind::tree:
        return true;
    case Kind::process:
        return p.id == process_id;
    case Kind::slot:
        return p.role == Role::worker && p.slot == slot;
    case Kind::role:
        return p.role == role;
    }
    return false;
}

std::vector<TickTop> values_at_tick(const RecordingData& data, Figure f, std::int64_t t_ms) {
    if (source_of(f) == FigureSource::fast)
        return rows_at_tick(data.fast, t_ms,
                            [f](const FastSample& s, std::int64_t) { return fast_figure(s, f); });
    if (source_of(f) == FigureSource::rollup)
        return rows_at_tick(
            data.rollup, t_ms,
            [carry = RollupCarry(f)](const RollupSample& s, std::int64_t t) mutable {
                return carry.next(t, s).kb;
            });
    return {};
}

Series series(const RecordingData& data, const SeriesQuery& q, std::vector<TickTop>* tops) {
    Series out{q.figure, {}, {}, 0};
    std::vector<SeriesPoint> points;
    const Figure f = q.figure;
    const FigureSource source = source_of(f);
    if (source == FigureSource::fast || source == FigureSource::rollup) {
        std::unordered_set<std::int64_t> selected;
        if (q.selector.kind != Selector::Kind::tree)
            for (const ProcessInfo& p : data.processes)
                if (q.selector.selects(p)) selected.insert(p.id);
        points = source == FigureSource::fast
                     ? tick_sums(
                           data.fast, selected, q,
                           [f](const FastSample& s, std::int64_t) { return fast_figure(s, f); },
                           tops, unreadable_spans(data, "fast", data.fast))
                     : tick_sums(
                           data.rollup, selected, q,
                           [carry = RollupCarry(f)](const RollupSample& s, std::int64_t t) mutable {
                               return carry.next(t, s).kb;
                           },
                           tops, unreadable_spans(data, "rollup", data.rollup));
    } else if (source == FigureSource::cgroup) {
        points = direct(data.cgroup, q, [f](const CgroupSample& s) { return cgroup_figure(s, f); });
    } else {
        points = direct(data.system, q, [f](const SystemSample& s) { return system_figure(s, f); });
    }
    for (const SeriesPoint& p : points)
        if (p.value && (!out.peak || *p.value > *out.peak)) {
            out.peak = p.value;
            out.peak_ms = p.t_ms;
        }
    out.points = decimate(std::move(points), q.max_points);
    return out;
}

} // namespace loaderlens
