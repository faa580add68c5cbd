// SPDX-License-Identifier: MIT
#include "budget_rules.hpp"

#include "loaderlens/units.hpp"

#include <algorithm>
#include <cstdio>
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

FilePeaks file_peaks(const RecordingData& data,
                     const std::function<bool(const std::string&)>& matches, std::int64_t from_ms) {
    FilePeaks out;
    std::unordered_map<std::int64_t, const ObjectInfo*> objects;
    for (const ObjectInfo& o : data.objects)
        if ((o.kind == MappingKind::file || o.kind == MappingKind::deleted_file) && matches(o.path))
            objects[o.id] = &o;
    std::vector<std::string> mapped;
    const auto& maps = data.maps;
    for (std::size_t i = 0; i < maps.size();) {
        const std::int64_t t = maps[i].t_ms;
        std::optional<std::int64_t> rss, pss;
        for (; i < maps.size() && maps[i].t_ms == t; ++i) {
            auto it = objects.find(maps[i].object_id);
            if (it == objects.end() || t < from_ms) continue;
            mapped.push_back(it->second->path);
            const MappedObject& f = maps[i].figures;
            rss = saturating_add(rss.value_or(0), f.rss_kb);
            pss = saturating_add(pss.value_or(0), f.pss_kb);
            if (!out.process_rss.kb || f.rss_kb > *out.process_rss.kb) {
                offer(out.process_rss, f.rss_kb, t);
                out.process_rss.process_id = maps[i].process_id;
                out.process_rss.where = it->second->path;
            }
        }
        if (rss) offer(out.rss, *rss, t);
        if (pss) offer(out.pss, *pss, t);
    }
    std::unordered_map<std::int64_t, const ResidencyFile*> files;
    for (const ResidencyFile& f : data.residency_files)
        if (f.identified() && matches(f.path)) files[f.id] = &f;
    // The residency tier reads each process's present pages of the followed files from pagemap
    // at 1 Hz, the maps tier smaps only every 5 s: a short run may have no maps sample after
    // the warm-up. Both are the file's RSS in a process; the higher peak of the two stands.
    const auto& present = data.mapped_residency;
    for (std::size_t i = 0; i < present.size();) {
        const std::int64_t t = present[i].t_ms;
        std::optional<std::int64_t> rss, pss;
        for (; i < present.size() && present[i].t_ms == t; ++i) {
            const MappedResidency& m = present[i].sample;
            auto it = files.find(m.file_id);
            if (it == files.end() || t < from_ms) continue;
            mapped.push_back(it->second->path);
            const std::int64_t kb = m.present_pages * it->second->page_size / 1024;
            rss = rss.value_or(0) + kb;
            if (m.pss_kb) pss = pss.value_or(0) + *m.pss_kb;
            if (!out.process_rss.kb || kb > *out.process_rss.kb) {
                offer(out.process_rss, kb, t);
                out.process_rss.process_id = m.process_id;
                out.process_rss.where = it->second->path;
            }
        }
        if (rss) offer(out.rss, *rss, t);
        if (pss) offer(out.pss, *pss, t);
    }
    out.rss.where = out.pss.where = joined(mapped);

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
