// SPDX-License-Identifier: MIT
#include "loaderlens/figure_model.hpp"

#include <algorithm>

namespace loaderlens {

const char* to_string(Reading reading) {
    switch (reading) {
    case Reading::statm:
        return "statm";
    case Reading::rollup:
        return "smaps_rollup";
    case Reading::rollup_kept:
        return "smaps_rollup (kept)";
    case Reading::composite:
        return "composite";
    case Reading::pagemap:
        return "pagemap";
    case Reading::smaps:
        return "smaps";
    }
    return "statm";
}

namespace {

// Which reading a rollup row's figure is: a composite row's PSS (and Pss_File, RSS) is computed
// at the sample, its other figures are the kept reading's.
Reading rollup_reading(const RollupSample& s, Figure figure) {
    const bool computed = figure == Figure::pss || figure == Figure::pss_file;
    if (s.pss_computed && computed) return Reading::composite;
    return s.age_ms > 0 ? Reading::rollup_kept : Reading::rollup;
}

const FigurePoints no_points;

} // namespace

FigureModel::FigureModel(const RecordingData& data) : data_(data) {
    for (std::size_t i = 0; i < data.fast.size(); ++i)
        fast[data.fast[i].sample.process_id].push_back(i);
    for (std::size_t i = 0; i < data.rollup.size(); ++i)
        rollup[data.rollup[i].sample.process_id].push_back(i);

    std::unordered_map<std::int64_t, const ObjectInfo*> objects;
    for (const ObjectInfo& o : data.objects) {
        if (o.kind != MappingKind::file && o.kind != MappingKind::deleted_file) continue;
        objects[o.id] = &o;
        if (o.size_bytes) file_sizes_[o.path] = *o.size_bytes;
    }
    std::unordered_map<std::int64_t, const ResidencyFile*> followed;
    for (const ResidencyFile& f : data.residency_files) {
        followed[f.id] = &f;
        // In the order the sampler saw them: a file re-read after it grew comes later.
        if (f.identified()) file_sizes_[f.path] = f.size_bytes;
    }

    // Sums per (path, tick, source): each complete for its tick.
    std::map<std::tuple<std::string, std::int64_t, Reading>, FileTick> sums;
    auto add = [&](std::int64_t process_id, const std::string& path, FileFigure figure,
                   FigurePoint point) {
        file_points_[{process_id, path, figure}].push_back(point);
        FileTick& tick = sums[{path, point.t_ms, point.source}];
        tick.t_ms = point.t_ms;
        tick.source = point.source;
        if (figure == FileFigure::pss) {
            tick.pss_kb = saturating_add(tick.pss_kb.value_or(0), point.kb);
            return;
        }
        tick.rss_kb = saturating_add(tick.rss_kb, point.kb);
        if (point.kb > 0) tick.process_ids.push_back(process_id);
    };
    for (const MapRow& row : data.maps) {
        auto it = objects.find(row.object_id);
        if (it == objects.end()) continue;
        const std::string& path = it->second->path;
        add(row.process_id, path, FileFigure::rss,
            {row.t_ms, row.figures.rss_kb, Reading::smaps, 0});
        add(row.process_id, path, FileFigure::pss,
            {row.t_ms, row.figures.pss_kb, Reading::smaps, 0});
    }
    for (const auto& [t, row] : data.mapped_residency) {
        auto it = followed.find(row.file_id);
        if (it == followed.end()) continue;
        const ResidencyFile& file = *it->second;
        const std::int64_t page_kb = std::max<std::int64_t>(1, file.page_size / 1024);
        add(row.process_id, file.path, FileFigure::rss,
            {t, saturating_mul(row.present_pages, page_kb), Reading::pagemap, 0});
        if (row.pss_kb)
            add(row.process_id, file.path, FileFigure::pss, {t, *row.pss_kb, Reading::pagemap, 0});
    }
    for (auto& [key, points] : file_points_)
        std::stable_sort(
            points.begin(), points.end(),
            [](const FigurePoint& a, const FigurePoint& b) { return a.t_ms < b.t_ms; });
    for (auto& [key, tick] : sums) {
        if (tick.source == Reading::pagemap && tick.pss_kb)
            pss_from_pagemap_.insert(std::get<0>(key));
        file_ticks_[std::get<0>(key)].push_back(std::move(tick));
    }
}

template <bool Last>
std::optional<FigurePoint> FigureModel::pick(std::int64_t process_id, Figure figure,
                                             std::int64_t from_ms, std::int64_t to_ms) const {
    const bool statm = source_of(figure) == FigureSource::fast;
    if (!statm && source_of(figure) != FigureSource::rollup) return std::nullopt;
    const auto& index = statm ? fast : rollup;
    auto it = index.find(process_id);
    if (it == index.end()) return std::nullopt;
    std::optional<FigurePoint> out;
    RollupCarry carry(figure);
    for (std::size_t row : it->second) {
        const std::int64_t t = statm ? data_.fast[row].t_ms : data_.rollup[row].t_ms;
        if (t > to_ms && !Last) break;
        std::optional<FigurePoint> point;
        if (statm) {
            if (const Kib value = figure_of(data_.fast[row].sample, figure))
                point = FigurePoint{t, *value, Reading::statm, 0};
        } else {
            const RollupSample& s = data_.rollup[row].sample;
            if (const RollupCarry::Value value = carry.next(t, s); value.kb)
                point = FigurePoint{
                    t, *value.kb, value.carried ? Reading::rollup_kept : rollup_reading(s, figure),
                    value.age_ms};
        }
        if (!point || t < from_ms || t > to_ms) continue;
        out = point;
        if (!Last) break;
    }
    return out;
}

std::optional<FigurePoint> FigureModel::last_in(std::int64_t process_id, Figure figure,
                                                std::int64_t from_ms, std::int64_t to_ms) const {
    return pick<true>(process_id, figure, from_ms, to_ms);
}

std::optional<FigurePoint> FigureModel::first_in(std::int64_t process_id, Figure figure,
                                                 std::int64_t from_ms, std::int64_t to_ms) const {
    return pick<false>(process_id, figure, from_ms, to_ms);
}

const FigurePoints& FigureModel::file_points(std::int64_t process_id, const std::string& path,
                                             FileFigure figure) const {
    auto it = file_points_.find({process_id, path, figure});
    return it == file_points_.end() ? no_points : it->second;
}

std::vector<std::string> FigureModel::files_of(std::int64_t process_id) const {
    std::vector<std::string> out;
    for (auto it = file_points_.lower_bound({process_id, std::string(), FileFigure::rss});
         it != file_points_.end() && std::get<0>(it->first) == process_id; ++it)
        if (out.empty() || out.back() != std::get<1>(it->first))
            out.push_back(std::get<1>(it->first));
    return out;
}

std::optional<std::int64_t> FigureModel::file_size_bytes(const std::string& path) const {
    auto it = file_sizes_.find(path);
    if (it == file_sizes_.end()) return std::nullopt;
    return it->second;
}

std::optional<FigurePoint> FigureModel::last_in(const FigurePoints& points, std::int64_t from_ms,
                                                std::int64_t to_ms) {
    auto end = std::upper_bound(points.begin(), points.end(), to_ms,
                                [](std::int64_t t, const FigurePoint& p) { return t < p.t_ms; });
    if (end == points.begin() || std::prev(end)->t_ms < from_ms) return std::nullopt;
    return *std::prev(end);
}

std::optional<FigurePoint> FigureModel::first_in(const FigurePoints& points, std::int64_t from_ms,
                                                 std::int64_t to_ms) {
    auto it = std::lower_bound(points.begin(), points.end(), from_ms,
                               [](const FigurePoint& p, std::int64_t t) { return p.t_ms < t; });
    if (it == points.end() || it->t_ms > to_ms) return std::nullopt;
    return *it;
}

const std::vector<FigureModel::FileTick>& FigureModel::file_ticks(const std::string& path) const {
    static const std::vector<FileTick> none;
    auto it = file_ticks_.find(path);
    return it == file_ticks_.end() ? none : it->second;
}

std::vector<std::string> FigureModel::files() const {
    std::vector<std::string> out;
    for (const auto& [path, ticks] : file_ticks_)
        out.push_back(path);
    return out;
}

std::optional<FigureModel::FileTick> FigureModel::file_total_peak(const std::string& path,
                                                                  FileFigure figure) const {
    std::optional<FileTick> peak;
    auto value = [figure](const FileTick& tick) {
        return figure == FileFigure::rss ? Kib(tick.rss_kb) : tick.pss_kb;
    };
    for (const FileTick& tick : file_ticks(path)) {
        if (figure == FileFigure::pss && !pss_counts(path, tick)) continue;
        if (value(tick) && (!peak || *value(tick) > *value(*peak))) peak = tick;
    }
    return peak;
}

bool FigureModel::pss_counts(const std::string& path, const FileTick& tick) const {
    // A file's Σ PSS from pagemap is consistent by construction (every process's present pages
    // from one run, each page divided among those that have it); smaps is read process after
    // process, and while workers fault pages in a page counted as shared by k in one and by k + 1
    // in the next makes the sum too large (+26% seen on a loaded CI machine). Where pagemap
    // follows the file, its Σ PSS is the one.
    if (!tick.pss_kb) return false;
    return tick.source == Reading::pagemap || !pss_from_pagemap_.contains(path);
}

} // namespace loaderlens
