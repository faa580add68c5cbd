// SPDX-License-Identifier: MIT
#include "budget_rules.hpp"

#include "loaderlens/figure_model.hpp"
#include "loaderlens/units.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace loaderlens::budget_rules {

std::string seconds(std::int64_t ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000.0);
    return text;
}

std::pair<Kib, std::int64_t> peak_after(const std::vector<SeriesPoint>& points,
                                        std::int64_t from_ms) {
    Kib peak;
    std::int64_t at = 0;
    for (const SeriesPoint& p : points) {
        if (p.t_ms < from_ms || !p.value) continue;
        if (!peak || *p.value > *peak) {
            peak = p.value;
            at = p.t_ms;
        }
    }
    return {peak, at};
}

void sized(RuleResult& r, std::int64_t measured_kb, std::int64_t limit_kb) {
    r.measured_kb = measured_kb;
    r.limit_kb = limit_kb;
    r.measured = format_kib(measured_kb);
    r.limit = "<= " + format_kib(limit_kb);
    r.status = measured_kb <= limit_kb ? RuleStatus::pass : RuleStatus::fail;
}

void unavailable(RuleResult& r, const std::string& why) {
    r.status = RuleStatus::unavailable;
    r.measured = "unavailable";
    r.detail = why;
}

void listed(RuleResult& r, const std::vector<std::string>& found) {
    r.status = found.empty() ? RuleStatus::pass : RuleStatus::fail;
    r.measured = found.empty() ? "none" : std::to_string(found.size()) + " found";
    r.limit = "none";
    for (const std::string& title : found)
        r.where += (r.where.empty() ? "" : "; ") + title;
}

std::string holder(const ReportData& report, const Selector& selected, const std::string& name,
                   std::int64_t t) {
    if (selected.kind != Selector::Kind::slot && selected.kind != Selector::Kind::role) return name;
    const ProcessSummary* alive = nullptr;
    for (const ProcessSummary& p : report.processes)
        if (selected.selects(p.info) && p.info.birth_ms <= t &&
            (!p.info.exit_ms || *p.info.exit_ms >= t))
            alive = &p;
    if (!alive) return name;
    if (selected.kind == Selector::Kind::role && alive->info.role == Role::worker)
        return name; // a sum over several processes
    return process_label(alive->info) + " (pid " + std::to_string(alive->info.key.pid) + ")";
}

namespace {

void offer(TimedPeak& peak, std::int64_t kb, std::int64_t t) {
    if (!peak.kb || kb > *peak.kb) {
        peak.kb = kb;
        peak.t_ms = t;
    }
}

std::string joined(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string out;
    for (const std::string& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

} // namespace

FilePeaks file_peaks(const RecordingData& data, const FigureModel& model,
                     const std::function<bool(const std::string&)>& matches, std::int64_t from_ms) {
    FilePeaks out;
    // The figure model's complete per-tick sums of each file (a maps tick: smaps; a residency
    // tick: pagemap), added up over the matched files at each tick of one source.
    // A tick's Σ PSS counts only where the model stands by every matched file's (pss_counts: the
    // file peaks of `check` and of the report are one figure).
    struct Sum {
        std::int64_t rss = 0;
        Kib pss;
        bool pss_refused = false;
    };
    std::map<std::pair<std::int64_t, Reading>, Sum> sums;
    std::vector<std::string> mapped;
    for (const std::string& path : model.files()) {
        if (!matches(path)) continue;
        for (const FigureModel::FileTick& tick : model.file_ticks(path)) {
            if (tick.t_ms < from_ms) continue;
            mapped.push_back(path);
            Sum& sum = sums[{tick.t_ms, tick.source}];
            sum.rss = saturating_add(sum.rss, tick.rss_kb);
            if (!tick.pss_kb) continue;
            if (model.pss_counts(path, tick))
                sum.pss = saturating_add(sum.pss.value_or(0), *tick.pss_kb);
            else
                sum.pss_refused = true;
        }
        for (const ProcessInfo& p : data.processes)
            for (const FigurePoint& point : model.file_points(p.id, path, FileFigure::rss))
                if (point.t_ms >= from_ms &&
                    (!out.process_rss.kb || point.kb > *out.process_rss.kb)) {
                    offer(out.process_rss, point.kb, point.t_ms);
                    out.process_rss.process_id = p.id;
                    out.process_rss.where = path;
                }
    }
    for (const auto& [tick, sum] : sums) {
        offer(out.rss, sum.rss, tick.first);
        if (sum.pss && !sum.pss_refused) offer(out.pss, *sum.pss, tick.first);
    }
    out.rss.where = out.pss.where = joined(mapped);

    std::unordered_map<std::int64_t, const ResidencyFile*> files;
    for (const ResidencyFile& f : data.residency_files)
        if (f.identified() && matches(f.path)) files[f.id] = &f;
    std::erase_if(
        files, [](const auto& entry) { return entry.second->method == CacheMethod::unavailable; });
    std::vector<std::string> cached;
    const auto& cache = data.cache_residency;
    for (std::size_t i = 0; i < cache.size();) {
        const std::int64_t t = cache[i].t_ms;
        std::optional<std::int64_t> sum;
        for (; i < cache.size() && cache[i].t_ms == t; ++i) {
            auto it = files.find(cache[i].sample.file_id);
            if (it == files.end() || t < from_ms) continue;
            cached.push_back(it->second->path);
            sum = sum.value_or(0) + cache[i].sample.totals.cached * it->second->page_size / 1024;
        }
        if (sum) offer(out.cached, *sum, t);
    }
    out.cached.where = joined(cached);
    return out;
}

std::optional<std::int64_t> growth_after(const GrowthFigure& figure, int warmup_epochs) {
    const std::size_t first = static_cast<std::size_t>(std::max(warmup_epochs - 1, 0));
    if (figure.at_epoch_end.size() <= first) return std::nullopt;
    GrowthFigure after = figure;
    after.at_epoch_end.erase(after.at_epoch_end.begin(),
                             after.at_epoch_end.begin() + static_cast<std::ptrdiff_t>(first));
    return after.growth_per_epoch_kb();
}

} // namespace loaderlens::budget_rules
