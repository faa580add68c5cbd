// SPDX-License-Identifier: MIT
#include "loaderlens/figure_model.hpp"
#include "loaderlens/merged_report.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/series.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_map>

namespace loaderlens {

namespace {

// The peak of a figure summed over the whole tree at each tick of its tier.
Peak tree_peak(const RecordingData& data, Figure figure) {
    const Series sums = series(data, {.figure = figure, .selector = Selector::tree()});
    return Peak{sums.peak, sums.peak_ms};
}

std::int64_t longest_tier_interval(const std::vector<Timed<TierStat>>& stats,
                                   const std::string& tier) {
    std::int64_t longest = 0;
    for (const auto& s : stats)
        if (s.sample.tier == tier) longest = std::max(longest, s.sample.interval_ms);
    return longest;
}

} // namespace

const ProcessInfo* find_process(const std::vector<ProcessSummary>& processes, std::int64_t id) {
    for (const auto& p : processes)
        if (p.info.id == id) return &p.info;
    return nullptr;
}

namespace {

// "\"VALUE\"" as a one-line message shows it (Recording's own wording).
std::string quoted(const std::string& value) {
    return "\"" + one_line(std::string_view(value).substr(0, 60)) +
           (value.size() > 60 ? "...\"" : "\"");
}

} // namespace

std::optional<std::int64_t> report_meta_number(const ReportInput& input, const std::string& key) {
    auto it = input.data.meta.find(key);
    if (it == input.data.meta.end()) return std::nullopt;
    const std::string& value = it->second;
    std::int64_t number = 0;
    const char* end = value.data() + value.size();
    if (auto [stop, error] = std::from_chars(value.data(), end, number);
        error == std::errc{} && stop == end && !value.empty())
        return number;
    throw RecordingError(input.path + (input.part.empty() ? "" : ": part " + input.part) +
                         ": meta " + key + " holds " + quoted(value) +
                         " where a number belongs (damaged recording?)");
}

ReportData build_report(ReportInput input, const DiagnosisOptions& options) {
    ReportData r;
    const RecordingData& data = input.data;
    r.path = input.path;
    r.part = input.part;
    r.meta = data.meta;
    r.end = input.end;
    r.finished = r.end.state == RecordingEnd::State::finished;
    r.missing_wal = input.missing_wal;
    r.start_unix_ns = report_meta_number(input, "start_unix_ns");
    // The real end: no earlier than the last sample, whatever end_ms says.
    r.duration_ms = std::max<std::int64_t>(r.finished ? r.end.end_ms.value_or(0) : 0,
                                           std::max<std::int64_t>(0, r.end.last_sample_ms));
    r.processes_missed.born = report_meta_number(input, "processes_born_counted");
    r.processes_missed.missed = report_meta_number(input, "processes_missed");
    r.processes_missed.at_least = data.meta.count("processes_missed_lower_bound") > 0;
    if (auto it = data.meta.find("processes_missed_unavailable"); it != data.meta.end())
        r.processes_missed.unavailable = it->second;
    else if (!r.processes_missed.missed || !r.processes_missed.born)
        r.processes_missed = {std::nullopt, std::nullopt, false,
                              r.end.state == RecordingEnd::State::being_written
                                  ? "counted when the recording finishes"
                                  : "not counted by the recorder that made this recording "
                                    "(an older one, or it stopped without finishing)"};
    r.markers = data.markers;
    r.loader = data.loader;
    r.unavailable = data.unavailable;

    std::unordered_map<std::int64_t, std::size_t> index;
    for (const ProcessInfo& p : data.processes) {
        index[p.id] = r.processes.size();
        r.processes.push_back(ProcessSummary{.info = p});
    }

    for (const auto& [t, s] : data.fast) {
        auto it = index.find(s.process_id);
        if (it == index.end()) continue;
        ProcessSummary& p = r.processes[it->second];
        p.rss.offer(s.rss, t);
        p.final_rss = s.rss;
        p.final_anon = s.rss_anon;
        p.final_file = s.rss_file;
        p.final_shmem = s.rss_shmem;
        p.final_swap = s.swap;
        p.last_seen_ms = std::max(p.last_seen_ms.value_or(t), t);
    }
    r.totals.rss = tree_peak(data, Figure::rss);

    RollupCarry uss(Figure::uss);
    for (const auto& [t, s] : data.rollup) {
        auto it = index.find(s.process_id);
        if (it == index.end()) continue;
        ProcessSummary& p = r.processes[it->second];
        p.pss.offer(s.pss, t);
        p.uss.offer(s.uss(), t);
        p.final_pss = s.pss;
        // A composite row has no USS (docs/figures.md): the last reading's is carried.
        const RollupCarry::Value final_uss = uss.next(t, s);
        p.final_uss = final_uss.kb;
        p.final_uss_age_ms = final_uss.kb ? final_uss.age_ms : 0;
        p.final_pss_age_ms = s.age_ms;
        p.last_seen_ms = std::max(p.last_seen_ms.value_or(t), t);
    }
    r.totals.pss = tree_peak(data, Figure::pss);
    r.totals.uss = tree_peak(data, Figure::uss);

    for (const auto& [t, c] : data.cgroup) {
        r.totals.cgroup_usage.offer(c.usage, t);
        r.totals.cgroup_limit = c.limit;
        r.totals.cgroup_unlimited = c.unlimited;
        r.totals.cgroup_version = c.version;
        r.totals.cgroup_path = c.path;
        r.totals.oom_kills = c.oom_kill;
        r.totals.failcnt = c.failcnt;
    }

    // Per mapped file, from the figure model: each process's peaks over its merged series
    // (pagemap at the residency rate and smaps at the maps rate), and the largest sum over the
    // tree at one tick of one source.
    const FigureModel model(data);
    std::map<std::string, std::size_t> file_index;
    for (const ObjectInfo& object : data.objects) {
        if (object.kind != MappingKind::file && object.kind != MappingKind::deleted_file) continue;
        if (!file_index.try_emplace(object.path, r.files.size()).second) continue;
        r.files.push_back(FileSummary{.object = object});
    }
    for (const ResidencyFile& followed : data.residency_files) {
        if (!followed.identified() || file_index.contains(followed.path)) continue;
        file_index.emplace(followed.path, r.files.size());
        r.files.push_back(FileSummary{
            .object = {0, MappingKind::file, followed.path, followed.inode, followed.size_bytes}});
    }
    for (const ProcessInfo& p : data.processes)
        for (const std::string& path : model.files_of(p.id)) {
            auto f = file_index.find(path);
            if (f == file_index.end()) continue;
            FileSummary::PerProcess per{p.id, {}, {}};
            for (const FigurePoint& point : model.file_points(p.id, path, FileFigure::rss))
                per.rss.offer(point.kb, point.t_ms);
            for (const FigurePoint& point : model.file_points(p.id, path, FileFigure::pss))
                per.pss.offer(point.kb, point.t_ms);
            r.files[f->second].processes.push_back(per);
        }
    for (FileSummary& file : r.files) {
        file.object.size_bytes = model.file_size_bytes(file.object.path);
        for (const FileFigure figure : {FileFigure::rss, FileFigure::pss})
            if (const auto peak = model.file_total_peak(file.object.path, figure))
                (figure == FileFigure::rss ? file.total_rss : file.total_pss)
                    .offer(figure == FileFigure::rss ? Kib(peak->rss_kb) : peak->pss_kb,
                           peak->t_ms);
    }
    std::erase_if(r.files, [](const FileSummary& f) { return f.processes.empty(); });
    for (auto& f : r.files)
        std::sort(f.processes.begin(), f.processes.end(),
                  [](const auto& a, const auto& b) { return a.process_id < b.process_id; });
    // Ties by path, not by object id: a merged recording gives the objects two nodes share one
    // id, and a part's report must list its files as the input's own report does.
    std::sort(r.files.begin(), r.files.end(), [](const FileSummary& a, const FileSummary& b) {
        const auto a_rss = a.total_rss.value.value_or(0), b_rss = b.total_rss.value.value_or(0);
        if (a_rss != b_rss) return a_rss > b_rss;
        return a.object.path < b.object.path;
    });

    const auto& stats = data.tier_stats;
    for (const char* tier : {"fast", "rollup", "maps", "cgroup", "residency"}) {
        TierSummary summary{tier};
        auto nominal = report_meta_number(input, std::string("interval_") + tier + "_ms");
        if (!nominal) continue; // a recording made before the tier existed
        summary.nominal_ms = *nominal;
        summary.longest_ms = std::max(summary.nominal_ms, longest_tier_interval(stats, tier));
        for (const auto& s : stats)
            if (s.sample.tier == tier) {
                summary.last_ms = s.sample.interval_ms;
                summary.cpu_us_per_run = s.sample.cpu_us_per_run;
            }
        if (summary.tier == "rollup")
            for (const auto& [t, s] : data.rollup) {
                ++summary.rows;
                if (s.pss_computed) {
                    ++summary.composite_rows;
                    summary.oldest_composite_ms = std::max(summary.oldest_composite_ms, s.age_ms);
                }
                if (s.age_ms == 0 || s.pss_computed) continue;
                ++summary.kept_rows;
                summary.oldest_kept_ms = std::max(summary.oldest_kept_ms, s.age_ms);
            }
        r.tiers.push_back(summary);
    }
    // Left out of Σ PSS/USS: the processes that make a tick of the sums partial, as series()
    // marks it (one rule: the export's partial ticks and this count agree).
    std::set<std::int64_t> maps_unreadable;
    for (const auto& [t, u] : r.unavailable)
        if (u.tier == "maps" && maps_unreadable.insert(u.process_id).second)
            r.files_unavailable.push_back(u);
    r.totals.rollup_unreadable = static_cast<int>(pss_unreadable_processes(data).size());
    r.residency = summarize_residency(
        data, r.processes, report_meta_number(input, "loader.data_file_cached_pages_before"));
    r.diagnosis = diagnose(data, r, options, model);
    return r;
}

ReportData build_report(const Recording& recording, const DiagnosisOptions& options) {
    if (!recording.parts().empty()) return build_merged_report(recording, options);
    // The report reads each process's present pages of a file, never the per-bucket vectors.
    return build_report(ReportInput{recording.path(),
                                    {},
                                    recording.read_all(ReadScope{.mapped_buckets = false}),
                                    recording.end(),
                                    recording.missing_wal()},
                        options);
}

} // namespace loaderlens
