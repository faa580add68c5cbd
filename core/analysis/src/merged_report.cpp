// SPDX-License-Identifier: MIT
// The job's report of a merged recording: the parts' own reports and the sums across them.
#include "loaderlens/merged_report.hpp"

#include <algorithm>

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

} // namespace

std::optional<ReportData> build_part_report(const Recording& recording, const std::string& name,
                                            const DiagnosisOptions& options) {
    for (const RecordingPart& part : recording.parts())
        if (part.name == name)
            return part_report(recording.path(), part,
                               on_part_clock(recording.read_part(part.id), part), options);
    return std::nullopt;
}

const PartReport* MergedReport::part(const std::string& name) const {
    for (const PartReport& p : parts)
        if (p.part.name == name) return &p;
    return nullptr;
}

std::vector<JobTotal> job_totals(
    const std::vector<std::pair<const RecordingPart*, const std::vector<SchedulerView>*>>& parts) {
    std::vector<JobTotal> out;
    if (parts.empty()) return out;
    for (const SchedulerView& first : *parts.front().second) {
        JobTotal total;
        SchedulerView& v = total.view;
        v.key = first.key;
        v.name = first.name;
        v.counts = first.counts;
        v.source = first.source;
        v.at_limit = first.at_limit;
        v.recorder_in_figure = first.recorder_in_figure;
        std::vector<PartSeries> series;
        std::optional<std::int64_t> first_peak_ms;
        for (const auto& [part, views] : parts) {
            auto view = std::find_if(views->begin(), views->end(),
                                     [&](const SchedulerView& s) { return s.key == first.key; });
            if (view == views->end()) continue;
            series.push_back(on_job_axis(view->points, *part));
            v.interval_ms = std::max(v.interval_ms, view->interval_ms);
            if (!view->peak) continue;
            const std::int64_t at = saturating_add(view->peak_ms, part->offset_ms);
            if (!first_peak_ms || at < *first_peak_ms) {
                first_peak_ms = at;
                total.first_peak_part = part->name;
            }
            if (!total.highest_kb || *view->peak > *total.highest_kb) {
                total.highest_kb = view->peak;
                total.highest_part = part->name;
            }
        }
        total.first_peak_ms = first_peak_ms.value_or(0);
        v.points = aligned_sum(series);
        const Peak peak = peak_of(v.points);
        v.peak = peak.value;
        v.peak_ms = peak.t_ms;
        v.samples = static_cast<int>(std::count_if(v.points.begin(), v.points.end(),
                                                   [](const SeriesPoint& p) { return p.value; }));
        if (!v.peak) v.unavailable = "no part had a value of it";
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
    std::vector<std::pair<const RecordingPart*, const std::vector<SchedulerView>*>> each;
    for (std::size_t i = 0; i < parts.size(); ++i)
        each.push_back({&parts[i].first, &views[i]});
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
    for (const RecordingPart& part : recording.parts()) {
        RecordingData rows = recording.read_part(part.id);
        r.markers.insert(r.markers.end(), rows.markers.begin(), rows.markers.end());
        r.unavailable.insert(r.unavailable.end(), rows.unavailable.begin(), rows.unavailable.end());
        RecordingData own = on_part_clock(std::move(rows), part);
        uss.push_back(on_job_axis(series(own, {.figure = Figure::uss}).points, part));
        report->parts.push_back(
            {part, part_report(recording.path(), part, std::move(own), options)});
    }
    std::stable_sort(r.markers.begin(), r.markers.end(),
                     [](const Marker& a, const Marker& b) { return a.t_ms < b.t_ms; });
    std::stable_sort(r.unavailable.begin(), r.unavailable.end(),
                     [](const auto& a, const auto& b) { return a.t_ms < b.t_ms; });
    std::vector<std::pair<const RecordingPart*, const std::vector<SchedulerView>*>> views;
    for (const PartReport& p : report->parts)
        views.push_back({&p.part, &p.report.diagnosis.schedulers});
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
