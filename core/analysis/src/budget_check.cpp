// SPDX-License-Identifier: MIT
#include "budget_rules.hpp"
#include "loaderlens/budget.hpp"
#include "loaderlens/units.hpp"

#include <algorithm>
#include <fnmatch.h>
#include <set>

namespace loaderlens {

const char* to_string(RuleStatus status) {
    switch (status) {
    case RuleStatus::pass:
        return "PASS";
    case RuleStatus::fail:
        return "FAIL";
    case RuleStatus::unavailable:
        return "UNAVAILABLE";
    }
    return "?";
}

int CheckOutcome::failed(bool skip_unavailable) const {
    return static_cast<int>(std::count_if(rules.begin(), rules.end(), [&](const RuleResult& r) {
        return r.status == RuleStatus::fail ||
               (r.status == RuleStatus::unavailable && !skip_unavailable);
    }));
}

const std::vector<std::string>& known_finding_kinds() {
    static const std::vector<std::string> kinds{"shared_file_cache",
                                                "readahead_amplification",
                                                "file_growth_persistent_workers",
                                                "per_generation_reset",
                                                "lmdb_opened_before_fork",
                                                "copy_on_read",
                                                "shared_memory_batches",
                                                "pinned_staging",
                                                "cache_thrashing",
                                                "anon_leak",
                                                "limit_near",
                                                "limit_other_mode",
                                                "step_tasks_on_node",
                                                "killed_near_limit",
                                                "inherited_anon",
                                                "hdf5_opened_before_fork",
                                                "hdf5_chunk_cache",
                                                "page_cache_outside_workers"};
    return kinds;
}

std::int64_t warmup_of(const ReportData& report, const Budget& budget, std::string* note) {
    std::int64_t warmup = budget.warmup_ms;
    std::string said = budget.warmup_ms ? "the first " + budget_rules::seconds(warmup) : "";
    if (budget.warmup_epochs > 0) {
        const auto& epochs = report.diagnosis.epochs;
        const std::string count = std::to_string(budget.warmup_epochs) + " epoch" +
                                  (budget.warmup_epochs == 1 ? "" : "s");
        if (static_cast<int>(epochs.size()) > budget.warmup_epochs) {
            const std::int64_t until =
                epochs[static_cast<std::size_t>(budget.warmup_epochs)].start_ms;
            if (until >= warmup) {
                warmup = until;
                said = "the first " + count + " (until " + budget_rules::seconds(until) +
                       ", from " + report.diagnosis.epochs_source + ")";
            }
        } else {
            // Fewer epochs than the warm-up: nothing would be left to check, which must not pass.
            warmup = std::max(warmup, report.duration_ms + 1);
            said = "the first " + count + ", but the run has " + std::to_string(epochs.size()) +
                   ": every figure is left out";
        }
    }
    if (warmup > report.duration_ms && budget.warmup_ms > 0 && warmup == budget.warmup_ms)
        said += " (longer than the run, " + budget_rules::seconds(report.duration_ms) +
                ": every figure is left out)";
    if (note) *note = said.empty() ? "none" : said;
    return warmup;
}

namespace {

using budget_rules::peak_after;
using budget_rules::sized;

void check_schedulers(const ReportData& report, const Budget& budget, std::int64_t warmup,
                      CheckOutcome& out) {
    for (const SchedulerBudget& b : budget.schedulers) {
        RuleResult r{.group = "schedulers", .name = b.view + " peak", .origin = b.origin};
        const SchedulerView* view = report.diagnosis.view(b.view);
        if (!view) {
            budget_rules::unavailable(r, "no such view in this recording");
        } else {
            const auto [peak, t] = peak_after(view->points, warmup);
            if (!peak) {
                budget_rules::unavailable(r, view->unavailable.empty()
                                                 ? "no sample after the warm-up"
                                                 : view->unavailable);
            } else {
                sized(r, *peak, b.max_kb);
                r.at_ms = t;
                r.where = view->name;
                if (view->peak_ms == t && view->peak_process_id)
                    if (const ProcessInfo* p =
                            find_process(report.processes, *view->peak_process_id))
                        r.where += "; largest holder " + process_label(*p) + " (pid " +
                                   std::to_string(p->key.pid) + ")";
            }
        }
        out.rules.push_back(std::move(r));
    }
    if (!budget.min_margin_kb) return;
    const bool site_known = report.diagnosis.site.known();
    for (const SchedulerView& view : report.diagnosis.schedulers) {
        // As the report judges: the site's figures only, where the site is known; the step's
        // tasks on the node together, where their recordings were found.
        if (!view.limit.kb || (site_known && view.site_role.empty())) continue;
        const bool node = view.node && view.node->counted_kb;
        RuleResult r{.group = "schedulers",
                     .name = view.key + " margin",
                     .origin = budget.min_margin_origin};
        const auto [peak, t] = peak_after(node ? view.node->points : view.points, warmup);
        if (!peak) {
            budget_rules::unavailable(r, view.unavailable.empty() ? "no sample after the warm-up"
                                                                  : view.unavailable);
        } else {
            const Kib recorders = node ? view.node->recorders_kb : view.recorder_kb;
            const std::int64_t seen = *peak + (view.recorder_in_figure ? 0 : recorders.value_or(0));
            const std::int64_t margin = *view.limit.kb - seen;
            r.measured_kb = margin;
            r.limit_kb = *budget.min_margin_kb;
            r.measured = margin_text(margin);
            r.limit = ">= " + format_kib(*budget.min_margin_kb);
            r.status = margin >= *budget.min_margin_kb ? RuleStatus::pass : RuleStatus::fail;
            r.at_ms = t;
            r.where = view.name +
                      (node ? ", summed over the " + std::to_string(view.node->tasks) +
                                  " tasks of the step on this node"
                            : std::string()) +
                      ", limit " + format_kib(view.limit.kb) + " (" + view.limit.source + "), " +
                      (node ? "their recorders' " : "recorder's own ") + format_kib(recorders) +
                      " included";
        }
        out.rules.push_back(std::move(r));
    }
}

void check_processes(const RecordingData& data, const ReportData& report, const Budget& budget,
                     std::int64_t warmup, CheckOutcome& out) {
    std::set<int> slots;
    for (const ProcessSummary& p : report.processes)
        if (p.info.role == Role::worker && p.info.slot >= 0) slots.insert(p.info.slot);
    for (const ProcessBudget& b : budget.processes)
        for (const FigureLimit& limit : b.limits) {
            const std::string figure(to_string(limit.figure));
            RuleResult r{.group = "process", .origin = limit.origin};
            std::vector<std::pair<Selector, std::string>> selections;
            if (b.role != Role::worker) {
                r.name = std::string(to_string(b.role)) + " " + figure;
                selections.push_back({Selector::of_role(b.role), to_string(b.role)});
            } else if (b.sum) {
                r.name = "workers sum " + figure;
                selections.push_back({Selector::of_role(Role::worker), "all workers"});
            } else if (b.slot) {
                r.name = "worker " + std::to_string(*b.slot) + " " + figure;
                selections.push_back({Selector::worker_slot(*b.slot),
                                      r.name.substr(0, r.name.size() - figure.size() - 1)});
            } else {
                r.name = "worker " + figure;
                for (int slot : slots)
                    selections.push_back(
                        {Selector::worker_slot(slot), "worker " + std::to_string(slot)});
            }
            Kib highest;
            std::int64_t at = 0;
            Selector held;
            std::string held_name;
            for (const auto& [selector, name] : selections) {
                const Series s =
                    series(data, {.figure = limit.figure, .selector = selector, .from_ms = warmup});
                if (s.peak && (!highest || *s.peak > *highest)) {
                    highest = s.peak;
                    at = s.peak_ms;
                    held = selector;
                    held_name = name;
                }
            }
            if (!highest) {
                budget_rules::unavailable(r, selections.empty()
                                                 ? "no such process in this recording"
                                                 : "not sampled after the warm-up");
            } else {
                sized(r, *highest, limit.max_kb);
                r.at_ms = at;
                r.where = budget_rules::holder(report, held, held_name, at);
            }
            out.rules.push_back(std::move(r));
        }
}

bool matches(const std::string& pattern, const std::string& path) {
    if (pattern.find('/') != std::string::npos)
        return fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
    const auto slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

void check_files(const RecordingData& data, const ReportData& report, const Budget& budget,
                 std::int64_t warmup, CheckOutcome& out) {
    const FigureModel model(data);
    for (const FileBudget& b : budget.files) {
        const budget_rules::FilePeaks peaks = budget_rules::file_peaks(
            data, model, [&](const std::string& path) { return matches(b.pattern, path); }, warmup);
        auto rule = [&](const char* figure, const std::optional<std::int64_t>& max,
                        const budget_rules::TimedPeak& peak, const std::string& missing) {
            if (!max) return;
            RuleResult r{.group = "file", .name = b.pattern + " " + figure, .origin = b.origin};
            if (!peak.kb) {
                budget_rules::unavailable(r, missing);
            } else {
                sized(r, *peak.kb, *max);
                r.at_ms = peak.t_ms;
                r.where = peak.where;
                if (peak.process_id)
                    if (const ProcessInfo* p = find_process(report.processes, *peak.process_id))
                        r.where += " in " + process_label(*p) + " (pid " +
                                   std::to_string(p->key.pid) + ")";
            }
            out.rules.push_back(std::move(r));
        };
        const std::string unmapped = "no mapped file matches after the warm-up";
        rule("rss", b.rss_kb, peaks.rss, unmapped);
        rule("pss", b.pss_kb, peaks.pss, unmapped);
        rule("process_rss", b.process_rss_kb, peaks.process_rss, unmapped);
        rule("cached", b.cached_kb, peaks.cached,
             "no followed file matches (residency follows mapped data files and --file)");
    }
}

void check_growth(const ReportData& report, const Budget& budget, CheckOutcome& out) {
    const Diagnosis& d = report.diagnosis;
    for (const GrowthBudget& b : budget.growth) {
        RuleResult r{.group = "growth", .name = b.figure + " per epoch", .origin = b.origin};
        if (b.role) r.name = std::string(to_string(*b.role)) + " " + r.name;
        std::optional<std::int64_t> highest;
        std::string where;
        for (const SlotGrowth& slot : d.growth) {
            const Role role = slot.slot < 0 ? Role::main : Role::worker;
            if (b.role && *b.role != role) continue;
            const GrowthFigure* figure = slot.find(b.figure);
            if (!figure) continue;
            auto per_epoch = budget_rules::growth_after(*figure, budget.warmup_epochs);
            if (per_epoch && (!highest || *per_epoch > *highest)) {
                highest = per_epoch;
                where = slot.label;
            }
        }
        if (!highest) {
            budget_rules::unavailable(
                r, d.epochs.size() < static_cast<std::size_t>(std::max(budget.warmup_epochs, 1)) + 1
                       ? "needs an epoch after the warm-up and one before; the run has " +
                             std::to_string(d.epochs.size()) +
                             (d.epochs_source.empty() ? " (no markers, no worker generations)" : "")
                       : "no slot has this figure at 2 epoch ends");
        } else {
            r.measured_kb = *highest;
            r.limit_kb = b.max_per_epoch_kb;
            r.measured = format_kib(*highest) + "/epoch";
            r.limit = "<= " + format_kib(b.max_per_epoch_kb) + "/epoch";
            r.status = *highest <= b.max_per_epoch_kb ? RuleStatus::pass : RuleStatus::fail;
            r.where = where + " (mean over epochs " +
                      std::to_string(std::max(budget.warmup_epochs, 1) + 1) + " to " +
                      std::to_string(d.epochs.size()) + ")";
        }
        out.rules.push_back(std::move(r));
    }
}

void check_findings(const ReportData& report, const Budget& budget, std::int64_t warmup,
                    CheckOutcome& out) {
    // A finding about the warm-up only (it ended before) is left out.
    auto counted = [&](const Finding& f) { return f.to_ms == 0 || f.to_ms >= warmup; };
    for (const auto& [kind, origin] : budget.findings.forbidden) {
        RuleResult r{.group = "findings", .name = "no " + kind, .origin = origin};
        std::vector<std::string> titles;
        for (const Finding& f : report.diagnosis.findings)
            if (f.kind == kind && counted(f)) {
                titles.push_back(f.title);
                if (!r.at_ms) r.at_ms = f.from_ms;
            }
        budget_rules::listed(r, titles);
        out.rules.push_back(std::move(r));
    }
    if (!budget.findings.max_severity) return;
    const Severity max = *budget.findings.max_severity;
    RuleResult r{.group = "findings",
                 .name = std::string("nothing above ") + to_string(max),
                 .origin = budget.findings.severity_origin};
    std::vector<std::string> titles;
    for (const Finding& f : report.diagnosis.findings)
        if (static_cast<int>(f.severity) < static_cast<int>(max) && counted(f)) {
            titles.push_back(std::string(to_string(f.severity)) + ": " + f.title);
            if (!r.at_ms) r.at_ms = f.from_ms;
        }
    budget_rules::listed(r, titles);
    out.rules.push_back(std::move(r));
}

} // namespace

CheckOutcome check_budget(const RecordingData& data, const ReportData& report,
                          const Budget& budget) {
    CheckOutcome out;
    out.warmup_ms = warmup_of(report, budget, &out.warmup_note);
    check_schedulers(report, budget, out.warmup_ms, out);
    check_processes(data, report, budget, out.warmup_ms, out);
    check_files(data, report, budget, out.warmup_ms, out);
    check_growth(report, budget, out);
    check_findings(report, budget, out.warmup_ms, out);
    return out;
}

} // namespace loaderlens
