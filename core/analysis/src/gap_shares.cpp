// SPDX-License-Identifier: MIT
// Why Σ RSS stands above Σ PSS: pages counted by RSS in every process that maps them, split by
// what backs them, each cause ranked by its measured share (a report once blamed a 48 MiB library
// for a 5.5 GiB gap that was 98% copy-on-write-shared anonymous memory).
#include "diagnosis_parts.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace loaderlens::diagnosis {

namespace {

// A fast row this close before a rollup tick describes the same moment (the fast tier runs every
// 100 ms; a stretched one less often).
constexpr std::int64_t fast_row_window_ms = 2000;

std::int64_t positive(std::int64_t kb) {
    return std::max<std::int64_t>(0, kb);
}

// The rollup tick with the largest Σ RSS - Σ PSS (empty: no rollup row with both).
std::optional<std::int64_t> widest_gap_tick(const RecordingData& data) {
    std::optional<std::int64_t> best_t;
    std::int64_t best = -1;
    std::size_t i = 0;
    while (i < data.rollup.size()) {
        const std::int64_t t = data.rollup[i].t_ms;
        std::int64_t gap = 0;
        bool any = false;
        for (; i < data.rollup.size() && data.rollup[i].t_ms == t; ++i) {
            const RollupSample& s = data.rollup[i].sample;
            if (!s.rss || !s.pss) continue;
            any = true;
            gap = saturating_add(gap, positive(saturating_sub(*s.rss, *s.pss)));
        }
        if (any && gap > best) {
            best = gap;
            best_t = t;
        }
    }
    return best_t;
}

CauseGaps cause_gaps_at(const RecordingData& data, const ProcessRows& rows, std::int64_t t_ms) {
    CauseGaps out;
    auto first = std::lower_bound(
        data.rollup.begin(), data.rollup.end(), t_ms,
        [](const Timed<RollupSample>& row, std::int64_t t) { return row.t_ms < t; });
    for (auto it = first; it != data.rollup.end() && it->t_ms == t_ms; ++it) {
        const RollupSample& s = it->sample;
        const std::int64_t id = s.process_id;
        auto value = [&](Figure f) {
            return last_value(data, rows, id, f, saturating_sub(t_ms, fast_row_window_ms), t_ms);
        };
        const auto anon = value(Figure::rss_anon), shmem = value(Figure::rss_shmem),
                   file = value(Figure::rss_file);
        // Sums clamped: a damaged recording may hold any value.
        if (anon && s.pss_anon) {
            const std::int64_t gap = positive(saturating_sub(anon->kb, *s.pss_anon));
            out.anon = saturating_add(out.anon, gap);
            out.anon_by_process[id] = gap;
        }
        if (shmem && s.pss_shmem)
            out.shmem =
                saturating_add(out.shmem, positive(saturating_sub(shmem->kb, *s.pss_shmem)));
        if (file && s.pss_file)
            out.file = saturating_add(out.file, positive(saturating_sub(file->kb, *s.pss_file)));
    }
    return out;
}

} // namespace

CauseGaps gap_shares(const RecordingData& data, const ProcessRows& rows, Diagnosis& diagnosis) {
    const auto tick = widest_gap_tick(data);
    if (!tick) return {};
    diagnosis.gap_ms = *tick;
    CauseGaps gaps = cause_gaps_at(data, rows, *tick);
    diagnosis.gap_total_kb = saturating_add(saturating_add(gaps.anon, gaps.shmem), gaps.file);
    if (gaps.anon > 0)
        diagnosis.gap.push_back(
            {"anon", "anonymous memory shared copy-on-write after fork", gaps.anon});
    if (gaps.shmem > 0)
        diagnosis.gap.push_back(
            {"shmem", "shared memory (/dev/shm segments, shared anonymous maps)", gaps.shmem});
    // File pages, split by file from the maps sample nearest the tick.
    std::optional<std::int64_t> maps_t;
    // In unsigned: a damaged recording's times may be any (llabs of INT64_MIN is undefined).
    auto distance = [](std::int64_t a, std::int64_t b) {
        return a > b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                     : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
    };
    for (const MapRow& row : data.maps)
        if (!maps_t || distance(row.t_ms, *tick) < distance(*maps_t, *tick)) maps_t = row.t_ms;
    std::int64_t listed = 0;
    if (maps_t && gaps.file > 0) {
        std::map<std::int64_t, std::int64_t> by_object;
        for (const MapRow& row : data.maps)
            if (row.t_ms == *maps_t)
                by_object[row.object_id] = saturating_add(
                    by_object[row.object_id],
                    positive(saturating_sub(row.figures.rss_kb, row.figures.pss_kb)));
        std::vector<GapShare> files;
        for (const ObjectInfo& o : data.objects) {
            if (o.kind != MappingKind::file && o.kind != MappingKind::deleted_file) continue;
            auto it = by_object.find(o.id);
            if (it != by_object.end() && it->second >= 1024)
                files.push_back({"file", o.path, it->second});
        }
        // Ties by path, not by object id (merged recordings renumber objects).
        std::sort(files.begin(), files.end(), [](const GapShare& a, const GapShare& b) {
            return a.gap_kb != b.gap_kb ? a.gap_kb > b.gap_kb : a.what < b.what;
        });
        if (files.size() > 3) files.resize(3);
        for (const GapShare& f : files) {
            diagnosis.gap.push_back(f);
            listed = saturating_add(listed, f.gap_kb);
        }
    }
    if (gaps.file > listed)
        diagnosis.gap.push_back({"file", listed ? "other mapped files" : "mapped files",
                                 saturating_sub(gaps.file, listed)});
    std::stable_sort(diagnosis.gap.begin(), diagnosis.gap.end(),
                     [](const GapShare& a, const GapShare& b) { return a.gap_kb > b.gap_kb; });
    return gaps;
}

} // namespace loaderlens::diagnosis
