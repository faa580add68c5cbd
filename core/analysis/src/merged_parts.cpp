// SPDX-License-Identifier: MIT
// A merged recording taken apart by part, and the sums across parts at aligned times.
#include "loaderlens/merged_report.hpp"

#include <algorithm>
#include <unordered_map>

namespace loaderlens {

namespace {

using PartRows = std::pair<RecordingPart, RecordingData>;
// A running sum of int64 figures that cannot overflow (GCC and Clang's 128-bit integer).
__extension__ typedef __int128 Wide;
using Owners = std::unordered_map<std::int64_t, std::size_t>; // process or file id -> part index

// Where each part's rows go: its index among the parts, by id.
class PartIndex {
  public:
    PartIndex(const std::vector<RecordingPart>& parts, const std::string& path) : path_(path) {
        for (std::size_t i = 0; i < parts.size(); ++i)
            index_[parts[i].id] = i;
    }
    // A row of `table` that names a part the recording does not hold is damage.
    std::size_t of(int part, const char* table) const {
        auto it = index_.find(part);
        if (it == index_.end())
            throw RecordingError(path_ + ": recording is damaged: " + table + " has rows of part " +
                                 std::to_string(part) + ", which table parts does not hold");
        return it->second;
    }

  private:
    std::string path_;
    std::unordered_map<int, std::size_t> index_;
};

// Rows of a process (or file) go to its part; a row of none (process 0) has no part to go to.
template <typename Row, typename Key, typename Add>
void by_owner(const std::vector<Row>& rows, const Owners& owners, Key key, Add add) {
    for (const Row& row : rows)
        if (auto it = owners.find(key(row)); it != owners.end()) add(it->second, row);
}

} // namespace

RecordingData on_part_clock(RecordingData d, const RecordingPart& part) {
    auto back = [&part](std::int64_t& t) { t = saturating_sub(t, part.offset_ms); };
    for (ProcessInfo& p : d.processes) {
        back(p.birth_ms);
        if (p.exit_ms) back(*p.exit_ms);
    }
    for (auto& r : d.fast)
        back(r.t_ms);
    for (auto& r : d.rollup)
        back(r.t_ms);
    for (MapRow& r : d.maps)
        back(r.t_ms);
    for (auto& r : d.cgroup)
        back(r.t_ms);
    for (auto& r : d.system)
        back(r.t_ms);
    for (Marker& m : d.markers)
        back(m.t_ms);
    for (auto& r : d.unavailable)
        back(r.t_ms);
    for (auto& r : d.tier_stats)
        back(r.t_ms);
    for (ResidencyFile& f : d.residency_files)
        back(f.first_ms);
    for (auto& r : d.cache_residency)
        back(r.t_ms);
    for (auto& r : d.mapped_residency)
        back(r.t_ms);
    for (LoaderEpoch& e : d.loader.epochs) {
        back(e.start_ms);
        back(e.end_ms);
    }
    for (LoaderWorker& w : d.loader.workers)
        back(w.t_ms);
    for (LoaderProgress& p : d.loader.progress)
        back(p.t_ms);
    d.meta = part.meta;
    d.parts.clear();
    auto meta = [&part](const char* key) {
        auto it = part.meta.find(key);
        return it == part.meta.end() ? std::string() : it->second;
    };
    d.loader.config_json = meta("loader.config"); // checked when the recording was read
    d.loader.status = meta("loader.status");
    d.loader.message = meta("loader.message");
    return d;
}

std::vector<PartRows> split_parts(const RecordingData& m, const std::string& path) {
    const PartIndex index(m.parts, path);
    std::vector<PartRows> out;
    for (const RecordingPart& p : m.parts) {
        out.push_back({p, {}});
        RecordingData& data = out.back().second;
        data.meta = p.meta;
        auto meta = [&p](const char* key) {
            auto it = p.meta.find(key);
            return it == p.meta.end() ? std::string() : it->second;
        };
        data.loader.config_json = meta("loader.config"); // checked when the recording was read
        data.loader.status = meta("loader.status");
        data.loader.message = meta("loader.message");
    }
    // Every time back on its part's own clock.
    auto back = [&out](std::size_t i, std::int64_t t) {
        return saturating_sub(t, out[i].first.offset_ms);
    };
    Owners process_part, file_part;
    for (ProcessInfo p : m.processes) {
        const std::size_t i = index.of(p.part, "processes");
        process_part[p.id] = i;
        p.birth_ms = back(i, p.birth_ms);
        if (p.exit_ms) p.exit_ms = back(i, *p.exit_ms);
        out[i].second.processes.push_back(std::move(p));
    }
    auto of_process = [](const auto& row) { return row.sample.process_id; };
    by_owner(m.fast, process_part, of_process, [&](std::size_t i, const Timed<FastSample>& r) {
        out[i].second.fast.push_back({back(i, r.t_ms), r.sample});
    });
    by_owner(m.rollup, process_part, of_process, [&](std::size_t i, const Timed<RollupSample>& r) {
        out[i].second.rollup.push_back({back(i, r.t_ms), r.sample});
    });
    std::vector<std::unordered_map<std::int64_t, bool>> objects_used(out.size());
    by_owner(
        m.maps, process_part, [](const MapRow& r) { return r.process_id; },
        [&](std::size_t i, MapRow r) {
            r.t_ms = back(i, r.t_ms);
            objects_used[i][r.object_id] = true;
            out[i].second.maps.push_back(r);
        });
    for (std::size_t i = 0; i < out.size(); ++i)
        for (const ObjectInfo& o : m.objects)
            if (objects_used[i].contains(o.id)) out[i].second.objects.push_back(o);
    for (auto [t, c] : m.cgroup) {
        const std::size_t i = index.of(c.part, "cgroup_samples");
        out[i].second.cgroup.push_back({back(i, t), c});
    }
    for (auto [t, y] : m.system) {
        const std::size_t i = index.of(y.part, "system_samples");
        out[i].second.system.push_back({back(i, t), y});
    }
    for (Marker marker : m.markers) {
        const std::size_t i = index.of(marker.part, "markers");
        marker.t_ms = back(i, marker.t_ms);
        out[i].second.markers.push_back(std::move(marker));
    }
    for (auto [t, u] : m.unavailable) {
        const std::size_t i = index.of(u.part, "unavailable");
        out[i].second.unavailable.push_back({back(i, t), u});
    }
    for (auto [t, s] : m.tier_stats) {
        const std::size_t i = index.of(s.part, "tier_stats");
        out[i].second.tier_stats.push_back({back(i, t), s});
    }
    for (ResidencyFile f : m.residency_files) {
        const std::size_t i = index.of(f.part, "residency_files");
        file_part[f.id] = i;
        f.first_ms = back(i, f.first_ms);
        out[i].second.residency_files.push_back(std::move(f));
    }
    by_owner(
        m.cache_residency, file_part, [](const auto& r) { return r.sample.file_id; },
        [&](std::size_t i, const Timed<CacheResidency>& r) {
            out[i].second.cache_residency.push_back({back(i, r.t_ms), r.sample});
        });
    by_owner(
        m.mapped_residency, file_part, [](const auto& r) { return r.sample.file_id; },
        [&](std::size_t i, const Timed<MappedResidency>& r) {
            out[i].second.mapped_residency.push_back({back(i, r.t_ms), r.sample});
        });
    for (LoaderEpoch e : m.loader.epochs) {
        const std::size_t i = index.of(e.part, "loader_epochs");
        e.start_ms = back(i, e.start_ms);
        e.end_ms = back(i, e.end_ms);
        out[i].second.loader.epochs.push_back(e);
    }
    for (LoaderWorker w : m.loader.workers) {
        const std::size_t i = index.of(w.part, "loader_workers");
        w.t_ms = back(i, w.t_ms);
        out[i].second.loader.workers.push_back(w);
    }
    for (LoaderProgress p : m.loader.progress) {
        const std::size_t i = index.of(p.part, "loader_progress");
        p.t_ms = back(i, p.t_ms);
        out[i].second.loader.progress.push_back(std::move(p));
    }
    return out;
}

std::vector<SeriesPoint> aligned_sum(const std::vector<PartSeries>& parts) {
    // One sweep over every part's points in time order, O(points x log points): a running sum
    // of each part's latest value (in 128 bits: figures from a damaged file must not overflow
    // it), parts joining at their start and leaving after their end.
    struct Event {
        std::int64_t t_ms;
        std::size_t part;
        const SeriesPoint* point;
    };
    std::vector<Event> events;
    for (std::size_t i = 0; i < parts.size(); ++i)
        for (const SeriesPoint& p : parts[i].points)
            if (p.t_ms >= parts[i].from_ms && p.t_ms <= parts[i].to_ms)
                events.push_back({p.t_ms, i, &p});
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.t_ms < b.t_ms; });
    std::vector<std::size_t> starts(parts.size()), ends(parts.size());
    for (std::size_t i = 0; i < parts.size(); ++i)
        starts[i] = ends[i] = i;
    std::sort(starts.begin(), starts.end(),
              [&](std::size_t a, std::size_t b) { return parts[a].from_ms < parts[b].from_ms; });
    std::sort(ends.begin(), ends.end(),
              [&](std::size_t a, std::size_t b) { return parts[a].to_ms < parts[b].to_ms; });

    // Each part's latest point while in its run (null: none yet); counts of the parts in their
    // run without a value, and with a partial one, make a tick's sum partial.
    std::vector<const SeriesPoint*> latest(parts.size(), nullptr);
    std::vector<bool> in_run(parts.size(), false);
    Wide sum = 0;
    int counted = 0, missing = 0, partial = 0;
    auto count = [&](std::size_t i, int sign) {
        const SeriesPoint* p = latest[i];
        if (p && p->value) {
            sum += sign * static_cast<Wide>(*p->value);
            counted += sign;
        } else {
            missing += sign;
        }
        if (p && p->partial) partial += sign;
    };
    std::vector<SeriesPoint> out;
    std::size_t e = 0, next_start = 0, next_end = 0;
    while (e < events.size()) {
        const std::int64_t t = events[e].t_ms;
        for (; next_start < starts.size() && parts[starts[next_start]].from_ms <= t; ++next_start)
            if (parts[starts[next_start]].to_ms >= t) {
                in_run[starts[next_start]] = true;
                count(starts[next_start], +1);
            }
        for (; next_end < ends.size() && parts[ends[next_end]].to_ms < t; ++next_end)
            if (in_run[ends[next_end]]) {
                count(ends[next_end], -1);
                in_run[ends[next_end]] = false;
            }
        for (; e < events.size() && events[e].t_ms == t; ++e) {
            const std::size_t i = events[e].part; // in its run: its point is within it
            count(i, -1);
            latest[i] = events[e].point;
            count(i, +1);
        }
        SeriesPoint point{t, {}, {}, {}, missing > 0 || partial > 0};
        if (counted > 0)
            point.value = static_cast<std::int64_t>(std::clamp<Wide>(sum, INT64_MIN, INT64_MAX));
        point.min = point.max = point.value;
        out.push_back(point);
    }
    return out;
}

} // namespace loaderlens
