// SPDX-License-Identifier: MIT
#include "loaderlens/openmetrics.hpp"

#include "loaderlens/merged_report.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/residency_generations.hpp"
#include "metric_set.hpp"

#include <charconv>
#include <unordered_map>

namespace loaderlens {

namespace {

using namespace metrics;

// One recording, or one part of a merged one (on its own clock, with its own meta).
struct Run {
    const std::map<std::string, std::string>& meta;
    const RecordingData& data;
    const Diagnosis* diagnosis; // null: none (a part the merged report does not name)
    // The report's processes: a snapshot's final figures are theirs (null: none).
    const std::vector<ProcessSummary>* processes;
    std::optional<std::int64_t> start_unix_ms;
    bool live = false;
    std::int64_t last_sample_ms = -1;
    // A merged recording's part: its name is a label too. Two parts can share node and SLURM
    // ids (two runs on one workstation, two steps of a job), and series with one label set
    // overwrote each other: the export showed one of the parts, unsaid.
    std::string part;
};

Labels run_labels(const Run& run) {
    Labels labels = recording_labels(run.meta);
    if (!run.part.empty()) labels.emplace_back("part", run.part);
    return labels;
}

class Exporter {
  public:
    Exporter(MetricSet& set, const Run& run, bool timestamps)
        : set_(set), run_(run), timestamps_(timestamps), base_(run_labels(run)) {}

    void all() {
        recording();
        processes();
        tree();
        if (run_.diagnosis) diagnosis(*run_.diagnosis);
        cgroup();
        files();
    }

  private:
    // A sample's time: with timestamps only (a snapshot has none).
    std::optional<std::int64_t> at(std::int64_t t_ms) const {
        if (!timestamps_ || !run_.start_unix_ms) return std::nullopt;
        return *run_.start_unix_ms + t_ms;
    }

    void recording() {
        const std::int64_t end = std::max<std::int64_t>(run_.last_sample_ms, 0);
        auto meta = [&](const char* key) {
            auto it = run_.meta.find(key);
            return it == run_.meta.end() ? std::string() : it->second;
        };
        set_.add(Family::recording_info,
                 with(base_, {{"kernel", meta("kernel")}, {"version", meta("tool_version")}}), "1",
                 at(0));
        set_.add(Family::recording_live, base_, run_.live ? "1" : "0", at(end));
        if (run_.start_unix_ms && run_.last_sample_ms >= 0) {
            const std::int64_t ms = *run_.start_unix_ms + run_.last_sample_ms;
            set_.add(Family::sample_timestamp, base_, seconds(ms), at(end));
        }
        // The recorder's own footprint when it finished (the figures the report adds to the
        // views): the live textfile's families, from the meta.
        for (const auto& [family, key] :
             {std::pair{Family::recorder_peak_rss, "recorder_peak_rss_kb"},
              std::pair{Family::recorder_pss, "recorder_pss_kb"},
              std::pair{Family::recorder_rss_anon, "recorder_anon_kb"}}) {
            std::int64_t kib = 0;
            const std::string text = meta(key);
            auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), kib);
            if (!text.empty() && error == std::errc() && rest == text.data() + text.size() &&
                kib >= 0)
                set_.add(family, base_, bytes(Kib(kib)), at(end));
        }
    }

    const Labels& labels_of(std::int64_t process_id) {
        auto it = labels_.find(process_id);
        if (it != labels_.end()) return it->second;
        Labels labels;
        if (const ProcessInfo* p = process(process_id))
            labels = with(process_labels(base_, p->role, p->slot),
                          {{"pid", std::to_string(p->key.pid)}});
        return labels_.emplace(process_id, std::move(labels)).first->second;
    }
    const ProcessInfo* process(std::int64_t id) const {
        auto it = processes_.find(id);
        return it == processes_.end() ? nullptr : it->second;
    }

    // The figures of `source` (the tier the rows are of) in each row.
    template <typename Row>
    void process_rows(const std::vector<Timed<Row>>& rows, FigureSource source) {
        auto one = [&](const Timed<Row>& row) {
            const Labels& labels = labels_of(row.sample.process_id);
            if (labels.empty()) return; // a row of a process the recording does not list
            for (const ProcessFigure& f : process_figures)
                if (source_of(f.figure) == source)
                    set_.add(f.family, labels, bytes(figure_of(row.sample, f.figure)),
                             at(row.t_ms));
        };
        if (timestamps_) {
            for (const auto& row : rows)
                one(row);
            return;
        }
        // A snapshot: each process's last row (its latest values; unavailable there: left out),
        // and for the figures the report gives a final of, the report's final, so that the
        // export and `report` say one number (a composite PSS row has no USS: the report's final
        // USS is the last reading that had one).
        std::unordered_map<std::int64_t, const Timed<Row>*> last;
        for (const auto& row : rows)
            last[row.sample.process_id] = &row;
        for (const auto& [id, row] : last) {
            const Labels& labels = labels_of(id);
            if (labels.empty()) continue;
            const ProcessSummary* summary = final_of(id);
            for (const ProcessFigure& f : process_figures)
                if (source_of(f.figure) == source) {
                    const std::optional<Kib> final =
                        summary ? report_final(*summary, f.figure) : std::nullopt;
                    set_.add(f.family, labels,
                             bytes(final ? *final : figure_of(row->sample, f.figure)));
                }
        }
    }

    const ProcessSummary* final_of(std::int64_t id) const {
        if (!run_.processes) return nullptr;
        for (const ProcessSummary& p : *run_.processes)
            if (p.info.id == id) return &p;
        return nullptr;
    }
    // The report's final of a figure, if the report gives one (empty: it does not).
    static std::optional<Kib> report_final(const ProcessSummary& p, Figure figure) {
        switch (figure) {
        case Figure::rss:
            return p.final_rss;
        case Figure::rss_anon:
            return p.final_anon;
        case Figure::rss_file:
            return p.final_file;
        case Figure::rss_shmem:
            return p.final_shmem;
        case Figure::swap:
            return p.final_swap;
        case Figure::pss:
            return p.final_pss;
        case Figure::uss:
            return p.final_uss;
        default:
            return std::nullopt;
        }
    }

    void processes() {
        for (const ProcessInfo& p : run_.data.processes)
            processes_.emplace(p.id, &p);
        process_rows(run_.data.fast, FigureSource::fast);
        process_rows(run_.data.rollup, FigureSource::rollup);
    }

    void points(Family family, const Labels& labels, const std::vector<SeriesPoint>& points) {
        if (!timestamps_) {
            if (!points.empty()) set_.add(family, labels, bytes(points.back().value));
            return;
        }
        for (const SeriesPoint& p : points)
            set_.add(family, labels, bytes(p.value), at(p.t_ms));
    }

    void tree() {
        for (const ProcessFigure& f : tree_figures)
            points(f.family, base_, series(run_.data, {f.figure, Selector::tree()}).points);
    }

    void diagnosis(const Diagnosis& d) {
        for (const SchedulerView& view : d.schedulers) {
            const Labels labels = with(base_, {{"view", view.key}});
            points(Family::scheduler, labels, view.points);
            // What the report holds against the limit: the peak with the recorder's share.
            set_.add(Family::scheduler_counted_peak, labels, bytes(view.counted_kb),
                     at(std::max<std::int64_t>(run_.last_sample_ms, 0)));
            if (!timestamps_) {
                set_.add(Family::scheduler_peak, labels, bytes(view.peak));
                if (view.limit.kb) set_.add(Family::scheduler_limit, labels, bytes(view.limit.kb));
                continue;
            }
            // Backfilled: the peak so far and the limit at each tick, so that they plot as lines.
            Kib peak;
            for (const SeriesPoint& p : view.points) {
                if (p.value && (!peak || *p.value > *peak)) peak = p.value;
                set_.add(Family::scheduler_peak, labels, bytes(peak), at(p.t_ms));
                if (view.limit.kb)
                    set_.add(Family::scheduler_limit, labels, bytes(view.limit.kb), at(p.t_ms));
            }
        }
        const std::int64_t end = std::max<std::int64_t>(run_.last_sample_ms, 0);
        if (!d.epochs.empty()) {
            if (!timestamps_)
                set_.add(Family::epoch, base_, std::to_string(d.epochs.back().number));
            else
                for (const Epoch& e : d.epochs)
                    set_.add(Family::epoch, base_, std::to_string(e.number), at(e.start_ms));
        }
        std::map<std::pair<std::string, std::string>, int> findings;
        for (const Finding& f : d.findings)
            ++findings[{f.kind, to_string(f.severity)}];
        for (const auto& [key, count] : findings)
            set_.add(Family::finding, with(base_, {{"kind", key.first}, {"severity", key.second}}),
                     std::to_string(count), at(end));
    }

    void cgroup() {
        const auto& rows = run_.data.cgroup;
        for (std::size_t i = timestamps_ || rows.empty() ? 0 : rows.size() - 1; i < rows.size();
             ++i) {
            const auto& [t, c] = rows[i];
            set_.add(Family::cgroup_usage, base_, bytes(c.usage), at(t));
            set_.add(Family::cgroup_limit, base_, c.unlimited ? std::nullopt : bytes(c.limit),
                     at(t));
        }
    }

    // Per followed file and residency run: its page cache, and the tree's sums of its present
    // pages and PSS. A run that read the file's page cache but has no row of any process mapping
    // it (they exited or unmapped it) holds none of it: 0, not the last run's figures.
    void files() {
        struct TickRun {
            std::optional<std::int64_t> cached_pages;
            bool mapped = false;
            std::int64_t present_pages = 0;
            Kib pss;
        };
        // A file that grew while followed has a generation per size: one series, under the
        // latest generation (residency_generations.hpp).
        const std::map<std::int64_t, std::int64_t> latest =
            latest_generations(run_.data.residency_files);
        auto file_of = [&](std::int64_t id) {
            auto it = latest.find(id);
            return it == latest.end() ? id : it->second;
        };
        std::map<std::int64_t, std::map<std::int64_t, TickRun>> runs; // file, t
        for (const auto& [t, c] : run_.data.cache_residency)
            runs[file_of(c.file_id)][t].cached_pages = c.totals.cached;
        for (const auto& [t, m] : run_.data.mapped_residency) {
            TickRun& r = runs[file_of(m.file_id)][t];
            r.mapped = true;
            r.present_pages = saturating_add(r.present_pages, m.present_pages);
            if (m.pss_kb) r.pss = saturating_add(r.pss.value_or(0), *m.pss_kb);
        }
        for (const ResidencyFile& f : latest_files(run_.data.residency_files)) {
            auto file_runs = runs.find(f.id);
            if (file_runs == runs.end()) continue;
            const Labels labels = with(base_, {{"file", f.path}});
            auto page_bytes = [&f](std::int64_t pages) {
                return std::to_string(saturating_mul(pages, f.page_size));
            };
            auto& by_time = file_runs->second;
            // A snapshot: the latest run only.
            for (auto it = timestamps_ ? by_time.begin() : std::prev(by_time.end());
                 it != by_time.end(); ++it) {
                const auto& [t, r] = *it;
                if (r.cached_pages && f.method != CacheMethod::unavailable)
                    set_.add(Family::file_cached, labels, page_bytes(*r.cached_pages), at(t));
                if (r.mapped) {
                    set_.add(Family::file_rss, labels, page_bytes(r.present_pages), at(t));
                    set_.add(Family::file_pss, labels, bytes(r.pss), at(t));
                } else if (r.cached_pages) {
                    set_.add(Family::file_rss, labels, "0", at(t));
                    set_.add(Family::file_pss, labels, "0", at(t));
                }
            }
        }
    }

    MetricSet& set_;
    const Run& run_;
    bool timestamps_;
    Labels base_;
    std::unordered_map<std::int64_t, const ProcessInfo*> processes_;
    std::unordered_map<std::int64_t, Labels> labels_;
};

} // namespace

void export_openmetrics(const Recording& recording, std::ostream& out,
                        const OpenMetricsOptions& options) {
    const ReportData report = build_report(recording);
    const RecordingData data = recording.read_all();
    MetricSet set(options.timestamps ? MetricSet::Keep::every : MetricSet::Keep::latest);
    auto write = [&](const Run& run) {
        if (options.timestamps && !run.start_unix_ms)
            throw RecordingError(recording.path() +
                                 ": no wall-clock start (meta start_unix_ns): --timestamps "
                                 "cannot date its samples");
        Exporter(set, run, options.timestamps).all();
    };
    if (report.merged) {
        // Each part as the recording it was, labelled by its own node and SLURM ids.
        for (const auto& [part, part_data] : split_parts(data, recording.path())) {
            const PartReport* part_report = report.merged->part(part.name);
            write(Run{part.meta, part_data, part_report ? &part_report->report.diagnosis : nullptr,
                      part_report ? &part_report->report.processes : nullptr,
                      part.start_unix_ns > 0 ? std::optional(part.start_unix_ns / 1'000'000)
                                             : std::nullopt,
                      false, part.last_sample_ms, part.name});
        }
    } else {
        write(
            Run{report.meta, data, &report.diagnosis, &report.processes, start_unix_ms(report.meta),
                report.end.state == RecordingEnd::State::being_written, report.end.last_sample_ms});
    }
    out << set.render(TextFormat::openmetrics);
}

} // namespace loaderlens
