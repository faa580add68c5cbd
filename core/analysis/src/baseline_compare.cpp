// SPDX-License-Identifier: MIT
// The baseline comparison of `check --baseline`: the same figures measured in two recordings.
#include "budget_rules.hpp"
#include "loaderlens/budget.hpp"
#include "loaderlens/units.hpp"

#include <cmath>
#include <map>
#include <set>

namespace loaderlens {

namespace {

struct Measured {
    Kib kb;
    std::int64_t t_ms = 0;
    std::string where;
};

// Every compared figure of one recording, by name.
using Figures = std::map<std::string, Measured>;

Figures measure(const RecordingData& data, const ReportData& report, std::int64_t warmup) {
    Figures out;
    for (const SchedulerView& view : report.diagnosis.schedulers) {
        const auto [peak, t] = budget_rules::peak_after(view.points, warmup);
        out["scheduler " + view.key + " peak"] = {peak, t, view.name};
    }
    for (Figure f : {Figure::rss, Figure::pss, Figure::uss}) {
        const Series s =
            series(data, {.figure = f, .selector = Selector::tree(), .from_ms = warmup});
        out["tree " + std::string(to_string(f))] = {s.peak, s.peak_ms, "the whole tree"};
    }
    std::set<int> slots;
    for (const ProcessSummary& p : report.processes)
        if (p.info.role == Role::worker && p.info.slot >= 0) slots.insert(p.info.slot);
    for (Figure f : {Figure::rss, Figure::pss, Figure::uss, Figure::private_dirty}) {
        const std::string name(to_string(f));
        const Series main = series(
            data, {.figure = f, .selector = Selector::of_role(Role::main), .from_ms = warmup});
        out["main " + name] = {main.peak, main.peak_ms, "main"};
        Measured highest;
        for (int slot : slots) {
            const Series s = series(
                data, {.figure = f, .selector = Selector::worker_slot(slot), .from_ms = warmup});
            if (s.peak && (!highest.kb || *s.peak > *highest.kb))
                highest = {s.peak, s.peak_ms, "worker " + std::to_string(slot)};
        }
        out["worker " + name] = highest;
    }
    // Data files, not the libraries and executables every process maps (ObjectInfo::is_code).
    std::set<std::string> paths;
    for (const ObjectInfo& o : data.objects)
        if (o.kind == MappingKind::file && !o.is_code()) paths.insert(o.path);
    const FigureModel model(data);
    for (const std::string& path : paths) {
        const budget_rules::FilePeaks peaks = budget_rules::file_peaks(
            data, model, [&](const std::string& p) { return p == path; }, warmup);
        if (!peaks.rss.kb) continue; // mapped only before the warm-up ended
        out["file " + path + " rss"] = {peaks.rss.kb, peaks.rss.t_ms, path};
        out["file " + path + " pss"] = {peaks.pss.kb, peaks.pss.t_ms, path};
    }
    return out;
}

} // namespace

std::vector<RuleResult>
compare_to_baseline(const RecordingData& data, const ReportData& report, std::int64_t warmup_ms,
                    const RecordingData& baseline_data, const ReportData& baseline,
                    std::int64_t baseline_warmup_ms, double tolerance, std::int64_t min_change_kb) {
    const Figures now = measure(data, report, warmup_ms);
    const Figures before = measure(baseline_data, baseline, baseline_warmup_ms);
    std::vector<RuleResult> out;
    for (const auto& [name, base] : before) {
        if (!base.kb) continue; // nothing to compare with
        // A small file (an executable's pages) cannot regress by the minimum change alone.
        if (name.starts_with("file ") && *base.kb < min_change_kb) continue;
        RuleResult r{.group = "baseline", .name = name};
        const auto it = now.find(name);
        const std::int64_t allowed =
            std::max(static_cast<std::int64_t>(
                         std::floor(static_cast<double>(*base.kb) * (1.0 + tolerance))),
                     *base.kb + min_change_kb);
        r.limit_kb = allowed;
        r.limit = "<= " + format_kib(allowed) + " (baseline " + format_kib(base.kb) + " +" +
                  std::to_string(static_cast<int>(std::lround(tolerance * 100))) + "%, at least +" +
                  format_kib(min_change_kb) + ")";
        if (it == now.end() || !it->second.kb) {
            // A file the baseline mapped and this run does not is no regression.
            if (name.starts_with("file ")) continue;
            budget_rules::unavailable(r, "the baseline has it, this recording does not");
        } else {
            r.measured_kb = it->second.kb;
            r.status = *it->second.kb <= allowed ? RuleStatus::pass : RuleStatus::fail;
            const double change = *base.kb
                                      ? 100.0 * static_cast<double>(*it->second.kb - *base.kb) /
                                            static_cast<double>(*base.kb)
                                      : 0.0;
            char percent[32];
            std::snprintf(percent, sizeof percent, " (%+.1f%%)", change);
            r.measured = format_kib(it->second.kb) + percent;
            r.at_ms = it->second.t_ms;
            r.where = it->second.where;
        }
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace loaderlens
