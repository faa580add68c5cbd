// SPDX-License-Identifier: MIT
// The job's report of a merged recording: the parts' own reports and the sums across them.
#include "loaderlens/merged_report.hpp"

#include <algorithm>
#include <map>

namespace loaderlens {

namespace {

PartSeries on_job_axis(const std::vector<SeriesPoint>& points, const RecordingPart& part) {
    PartSeries out{points, part.offset_ms, saturating_add(part.offset_ms, part.duration_ms)};
    for (SeriesPoint& p : out.points)
        p.t_ms = saturating_add(p.t_ms, part.offset_ms);
    return out;
}

Peak peak_of(const std::vector<SeriesPoint>& points) {
    Peak peak;
    for (const SeriesPoint& p : points)
        peak.offer(p.value, p.t_ms);
    return peak;
}

// How a part ended, from what the merge kept of it: its end state, its last sample, its meta.
RecordingEnd part_end(const ReportInput& part, const RecordingPart& p) {
    RecordingEnd end;
    end.state = p.end_state == "cut" ? RecordingEnd::State::cut : RecordingEnd::State::finished;
    end.last_sample_ms = p.last_sample_ms;
    end.end_ms = report_meta_number(part, "end_ms");
    end.writer_pid = report_meta_number(part, "writer_pid");
    end.signal_ms = report_meta_number(part, "signal_received_ms");
    if (auto it = p.meta.find("signal_received"); it != p.meta.end() && !it->second.empty())
        end.signal = it->second;
    return end;
}

// A part's process summary moved onto the job's axis.
ProcessSummary on_job_axis(ProcessSummary s, std::int64_t offset) {
    auto shift = [offset](std::int64_t t) { return saturating_add(t, offset); };
    s.info.birth_ms = shift(s.info.birth_ms);
    if (s.info.exit_ms) s.info.exit_ms = shift(*s.info.exit_ms);
    for (Peak* peak : {&s.rss, &s.pss, &s.uss})
        if (peak->value) peak->t_ms = shift(peak->t_ms);
    if (s.last_seen_ms) s.last_seen_ms = shift(*s.last_seen_ms);
    return s;
}

// The ordinary report of a part's rows (on its own clock).
ReportData part_report(const std::string& path, const RecordingPart& part, RecordingData own,
                       const DiagnosisOptions& options) {
    ReportInput input{path, part.name, std::move(own), {}, {}};
    input.end = part_end(input, part);
    return build_report(std::move(input), options);
}

// Tasks of one SLURM step on one node, merged as parts: SLURM holds their sum to the step's
// limit, so each part's report sums the others as the report of one task sums the recordings
// beside it (docs/slurm.md). Each part's views, computed once (one part's rows in memory at a
// time); none where no two parts are tasks of one step on one node.
std::vector<std::vector<SchedulerView>> sibling_views(const Recording& recording,
                                                      const std::vector<RecordingPart>& parts) {
    auto same_step = [](const RecordingPart& a, const RecordingPart& b) {
        return a.id != b.id && !a.job.empty() && !a.step.empty() && !a.task.empty() &&
               a.host == b.host && a.job == b.job && a.step == b.step && a.task != b.task;
    };
    bool any = false;
    for (const RecordingPart& a : parts)
        for (const RecordingPart& b : parts)
            any = any || same_step(a, b);
    std::vector<std::vector<SchedulerView>> views(parts.size());
    if (!any) return views;
    for (std::size_t i = 0; i < parts.size(); ++i)
        views[i] = task_views(on_part_clock(recording.read_part(parts[i].id), parts[i]));
    return views;
}

// The options of part `i`'s report: the other parts that are tasks of its step on its node.
DiagnosisOptions with_siblings(const DiagnosisOptions& options,
                               const std::vector<RecordingPart>& parts,
                               const std::vector<std::vector<SchedulerView>>& views,
                               std::size_t i) {
    DiagnosisOptions own = options;
    const RecordingPart& a = parts[i];
    for (std::size_t j = 0; j < parts.size(); ++j) {
        const RecordingPart& b = parts[j];
        if (j == i || views[j].empty() || a.job.empty() || a.task.empty() || b.task == a.task ||
            a.host != b.host || a.job != b.job || a.step != b.step)
            continue;
        own.siblings.push_back({b.name, b.task, saturating_sub(b.offset_ms, a.offset_ms),
                                b.duration_ms, b.end_state == "cut", views[j]});
    }
    return own;
}

} // namespace

std::optional<ReportData> build_part_report(const Recording& recording, const std::string& name,
                                            const DiagnosisOptions& options) {
    const std::vector<RecordingPart> parts = recording.parts();
    for (std::size_t i = 0; i < parts.size(); ++i)
        if (parts[i].name == name)
            return part_report(recording.path(), parts[i],
                               on_part_clock(recording.read_part(parts[i].id), parts[i]),
                               with_siblings(options, parts, sibling_views(recording, parts), i));
    return std::nullopt;
}

const PartReport* MergedReport::part(const std::string& name) const {
    for (const PartReport& p : parts)
        if (p.part.name == name) return &p;
    return nullptr;
}

std::string cgroup_of(const RecordingData& rows) {
    for (auto it = rows.cgroup.rbegin(); it != rows.cgroup.rend(); ++it)
        if (!it->sample.path.empty()) return it->sample.version + ":" + it->sample.path;
    return {};
}

namespace {

// The series of a view over the parts, one per part; in a cgroup view, one per cgroup of a node:
// tasks of one step on a node read the step's cgroup each, and it holds their memory once.
std::vector<PartSeries> view_series(const std::vector<PartViews>& parts,
                                    const std::vector<const SchedulerView*>& views, bool cgroup) {
    std::vector<PartSeries> series;
    std::map<std::pair<std::string, std::string>, std::size_t> read_by; // (host, cgroup) -> series
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (!views[i]) continue;
        PartSeries own = on_job_axis(views[i]->points, *parts[i].part);
        if (!cgroup || parts[i].cgroup.empty()) {
            series.push_back(std::move(own));
            continue;
        }
        auto [it, first] =
            read_by.emplace(std::pair{parts[i].part->host, parts[i].cgroup}, series.size());
        if (first) {
            series.push_back(std::move(own));
            continue;
        }
        PartSeries& shared = series[it->second];
        shared.points.insert(shared.points.end(), own.points.begin(), own.points.end());
        std::stable_sort(
            shared.points.begin(), shared.points.end(),
            [](const SeriesPoint& a, const SeriesPoint& b) { return a.t_ms < b.t_ms; });
        shared.from_ms = std::min(shared.from_ms, own.from_ms);
        shared.to_ms = std::max(shared.to_ms, own.to_ms);
    }
    return series;
}

} // namespace

std::vector<JobTotal> job_totals(const std::vector<PartViews>& parts) {
    std::vector<JobTotal> out;
    if (parts.empty()) return out;
    for (const SchedulerView& first : *parts.front().views) {
        JobTotal total;
        SchedulerView& v = total.view;
        v.key = first.key;
        v.name = first.name;
        v.counts = first.counts;
        v.source = first.source;
        v.at_limit = first.at_limit;
        v.recorder_in_figure = first.recorder_in_figure;
        std::vector<const SchedulerView*> views;
        std::optional<std::int64_t> first_peak_ms;
        for (const PartViews& p : parts) {
            auto view = std::find_if(p.views->begin(), p.views->end(),
                                     [&](const SchedulerView& s) { return s.key == first.key; });
            views.push_back(view == p.views->end() ? nullptr : &*view);
            if (view == p.views->end()) continue;
            v.interval_ms = std::max(v.interval_ms, view->interval_ms);
            if (!view->peak) continue;
            const std::int64_t at = saturating_add(view->peak_ms, p.part->offset_ms);
            if (!first_peak_ms || at < *first_peak_ms) {
                first_peak_ms = at;
                total.first_peak_part = p.part->name;
            }
            if (!total.highest_kb || *view->peak > *total.highest_kb) {
                total.highest_kb = view->peak;
                total.highest_part = p.part->name;
            }
        }
        total.first_peak_ms = first_peak_ms.value_or(0);
        v.points = aligned_sum(view_series(parts, views, v.recorder_in_figure));
        const Peak peak = peak_of(v.points);
        v.peak = peak.value;
        v.peak_ms = peak.t_ms;
        v.samples = static_cast<int>(std::count_if(v.points.begin(), v.points.end(),
                                                   [](const SeriesPoint& p) { return p.value; }));
        if (!v.peak) v.unavailable = "no part had a value of it";
        // The recorders of the parts in their run at the peak: each is a process of its step,
        // counted by SLURM with the rest (sacct's TRESUsageInTot has them).
        for (std::size_t i = 0; i < parts.size() && v.peak && !v.recorder_in_figure; ++i) {
            const RecordingPart& part = *parts[i].part;
            if (!views[i] || !views[i]->recorder_kb || v.peak_ms < part.offset_ms ||
                v.peak_ms > saturating_add(part.offset_ms, part.duration_ms))
                continue;
            v.recorder_kb = saturating_add(v.recorder_kb.value_or(0), *views[i]->recorder_kb);
        }
        if (v.peak) v.counted_kb = saturating_add(*v.peak, v.recorder_kb.value_or(0));
        out.push_back(std::move(total));
    }
    return out;
}

std::vector<SchedulerView> job_scheduler_series(const RecordingData& data,
                                                const std::string& path) {
    if (data.parts.empty()) return scheduler_series(data);
    const auto parts = split_parts(data, path);
    std::vector<std::vector<SchedulerView>> views;
    for (const auto& [part, rows] : parts)
        views.push_back(scheduler_series(rows));
    std::vector<PartViews> each;
    for (std::size_t i = 0; i < parts.size(); ++i)
        each.push_back({&parts[i].first, &views[i], cgroup_of(parts[i].second)});
    std::vector<SchedulerView> out;
    for (JobTotal& total : job_totals(each))
        out.push_back(std::move(total.view));
    return out;
}

Series tree_series(const RecordingData& data, Figure figure, const std::string& path) {
    if (data.parts.empty()) return series(data, {.figure = figure});
    std::vector<PartSeries> each;
    for (const auto& [part, rows] : split_parts(data, path))
        each.push_back(on_job_axis(series(rows, {.figure = figure}).points, part));
    Series out{figure, aligned_sum(each), {}, 0};
    const Peak peak = peak_of(out.points);
    out.peak = peak.value;
    out.peak_ms = peak.t_ms;
    return out;
}

ReportData build_merged_report(const Recording& recording, const DiagnosisOptions& options) {
    ReportData r;
    r.path = recording.path();
    r.meta = recording.all_meta();
    r.end = recording.end();
    r.finished = r.end.state == RecordingEnd::State::finished;
    r.missing_wal = recording.missing_wal();
    r.start_unix_ns = recording.meta_number("start_unix_ns");
    r.duration_ms = std::max<std::int64_t>(r.finished ? r.end.end_ms.value_or(0) : 0,
                                           std::max<std::int64_t>(0, r.end.last_sample_ms));
    // One part's rows in memory at a time: a job of many nodes is reported in the memory of its
    // largest node (and of every part's report).
    auto report = std::make_shared<MergedReport>();
    std::vector<PartSeries> uss;
    std::vector<std::string> cgroups;
    const std::vector<RecordingPart> parts = recording.parts();
    const auto siblings = sibling_views(recording, parts);
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const RecordingPart& part = parts[i];
        RecordingData rows = recording.read_part(part.id);
        r.markers.insert(r.markers.end(), rows.markers.begin(), rows.markers.end());
        r.unavailable.insert(r.unavailable.end(), rows.unavailable.begin(), rows.unavailable.end());
        RecordingData own = on_part_clock(std::move(rows), part);
        cgroups.push_back(cgroup_of(own));
        uss.push_back(on_job_axis(series(own, {.figure = Figure::uss}).points, part));
        report->parts.push_back({part, part_report(recording.path(), part, std::move(own),
                                                   with_siblings(options, parts, siblings, i))});
    }
    std::stable_sort(r.markers.begin(), r.markers.end(),
                     [](const Marker& a, const Marker& b) { return a.t_ms < b.t_ms; });
    std::stable_sort(r.unavailable.begin(), r.unavailable.end(),
                     [](const auto& a, const auto& b) { return a.t_ms < b.t_ms; });
    std::vector<PartViews> views;
    for (std::size_t i = 0; i < report->parts.size(); ++i)
        views.push_back(
            {&report->parts[i].part, &report->parts[i].report.diagnosis.schedulers, cgroups[i]});
    report->totals = job_totals(views);

    for (const PartReport& p : report->parts) {
        for (const ProcessSummary& s : p.report.processes)
            r.processes.push_back(on_job_axis(s, p.part.offset_ms));
        r.totals.rollup_unreadable += p.report.totals.rollup_unreadable;
        for (Finding f : p.report.diagnosis.findings) {
            f.part = p.part.name;
            f.from_ms = saturating_add(f.from_ms, p.part.offset_ms);
            f.to_ms = saturating_add(f.to_ms, p.part.offset_ms);
            r.diagnosis.findings.push_back(std::move(f));
        }
    }
    std::stable_sort(r.diagnosis.findings.begin(), r.diagnosis.findings.end(),
                     [](const Finding& a, const Finding& b) {
                         return static_cast<int>(a.severity) < static_cast<int>(b.severity);
                     });
    for (const JobTotal& total : report->totals) {
        r.diagnosis.schedulers.push_back(total.view);
        const Peak peak{total.view.peak, total.view.peak_ms};
        if (total.view.key == "slurm_linux") r.totals.rss = peak;
        if (total.view.key == "slurm_usepss") r.totals.pss = peak;
        if (total.view.key == "cgroup_usage") r.totals.cgroup_usage = peak;
    }
    r.totals.uss = peak_of(aligned_sum(uss));
    r.merged = std::move(report);
    return r;
}

} // namespace loaderlens
