// SPDX-License-Identifier: MIT
// Findings about the limit (scenario 12, docs/findings.md): judged by what the job's site counts
// and enforces (Diagnosis::site; every view when it is not known), by the sum over a SLURM step's
// tasks on the node when their recordings were found, and a step killed outright near it.
#include "diagnosis_parts.hpp"
#include "findings_thresholds.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace loaderlens::diagnosis {

namespace {

std::string step_name(const RecordingData& data) {
    return meta_text(data.meta, "slurm_job_id") + "." + meta_text(data.meta, "slurm_step_id");
}

// "Σ RSS of the step's processes" for one task, "the 2 tasks' Σ ..." for a node sum.
std::string view_line(const SchedulerView& v) {
    if (v.node && v.node->counted_kb)
        return fmt::format(
            "{}, summed over the {} tasks of the step on this node: peak {} at {:.1f} s + "
            "recorders {}, limit {} ({}): margin {} (this task alone: {})",
            v.name, v.node->tasks, size_text(*v.node->peak), v.node->peak_ms / 1000.0,
            size_text(v.node->recorders_kb.value_or(0)), size_text(*v.limit.kb), v.limit.source,
            size_text(*v.node->margin_kb), size_text(v.counted_kb.value_or(0)));
    return fmt::format("{}: peak {} at {:.1f} s{}, limit {} ({}): margin {}", v.name,
                       size_text(*v.peak), v.peak_ms / 1000.0,
                       v.recorder_kb ? fmt::format(" + recorder {}", size_text(*v.recorder_kb))
                                     : std::string(),
                       size_text(*v.limit.kb), v.limit.source, size_text(*v.margin_kb));
}

std::string site_line(const SiteAccounting& site) {
    if (site.source == "report --accounting")
        return "judged as --accounting says the site counts; the other views are what it "
               "would be if the site counted them";
    return fmt::format("the site counts as {} says: JobAcctGatherType {}, JobAcctGatherParams {}{}",
                       site.source, site.gather_type,
                       site.gather_params.empty() ? "(none)" : site.gather_params,
                       site.poll_s ? fmt::format(", polled every {} s", *site.poll_s) : "");
}

std::string polled_line(const SchedulerView& v) {
    const SchedulerView::Polled& p = *v.polled;
    return fmt::format(
        "SLURM polls every {} s: the highest poll most likely saw {} ({}..{} over {} poll "
        "phases){}",
        p.period_s, size_text(*p.likely_kb), size_text(*p.low_kb), size_text(*p.high_kb), p.phases,
        v.limit.kb ? fmt::format("; a poll saw it over the limit at {} of {} phases", p.phases_over,
                                 p.phases)
                   : "");
}

void node_tasks_finding(const Context& c, std::vector<Finding>& out) {
    const Diagnosis& d = c.diagnosis;
    if (d.node_tasks.size() < 2 || d.node_tasks_found.size() >= d.node_tasks.size()) return;
    const SchedulerView* view = nullptr;
    for (const SchedulerView& v : d.schedulers) // the site's figures come first
        if (v.node) {
            view = &v;
            break;
        }
    Finding x;
    x.kind = "step_tasks_on_node";
    x.severity = Severity::warning;
    const std::size_t tasks = d.node_tasks.size();
    x.title = fmt::format(
        "one of {} tasks of step {} on this node: SLURM holds their sum to the limit, and {} "
        "of the other tasks' recordings {} not found beside this one",
        tasks, step_name(c.data), tasks - d.node_tasks_found.size(),
        tasks - d.node_tasks_found.size() == 1 ? "was" : "were");
    for (const std::string& missing : d.node_tasks_missing)
        x.evidence.push_back("not found: " + missing);
    if (view && view->counted_kb) {
        const std::int64_t each = *view->counted_kb;
        const std::int64_t all = each * static_cast<std::int64_t>(tasks);
        x.evidence.push_back(fmt::format(
            "{}: this task counts {}; if each of the {} tasks held as much: {}{}", view->name,
            size_text(each), tasks, size_text(all),
            view->limit.kb ? fmt::format(", margin {} to {} ({})",
                                         size_text(saturating_sub(*view->limit.kb, all)),
                                         size_text(*view->limit.kb), view->limit.source)
                           : std::string()));
        x.figure_name = "node_estimate_kb";
        x.figure = static_cast<double>(all);
        x.figure_unit = "KiB";
    }
    x.advice = "keep the tasks' recordings in one directory, named with %t (the default name "
               "does), and report one of them there; or merge them (loaderlens merge) for the "
               "node's sum (docs/slurm.md)";
    out.push_back(std::move(x));
}

} // namespace

void limit_findings(const Context& c, std::vector<Finding>& out) {
    node_tasks_finding(c, out);
    const Diagnosis& d = c.diagnosis;
    const bool site = d.site.known();
    const SchedulerView* tightest = nullptr;
    std::vector<std::string> evidence, if_counted;
    const SchedulerView* other_over = nullptr;
    for (const SchedulerView& v : d.schedulers) {
        const Kib margin = v.judged_margin_kb();
        if (!margin || !v.limit.kb || *v.limit.kb <= 0) continue;
        if (site && v.site_role.empty()) {
            if_counted.push_back("if your site counted " + view_line(v));
            if (*margin < 0 && (!other_over || *margin < *other_over->judged_margin_kb()))
                other_over = &v;
            continue;
        }
        evidence.push_back(view_line(v));
        if (v.polled) evidence.push_back(polled_line(v));
        const double used = static_cast<double>(saturating_sub(*v.limit.kb, *margin)) / *v.limit.kb;
        if (used >= thresholds::limit_near_share &&
            (!tightest || *margin < *tightest->judged_margin_kb()))
            tightest = &v;
    }
    if (site) evidence.insert(evidence.begin(), site_line(d.site));
    evidence.insert(evidence.end(), if_counted.begin(), if_counted.end());
    Finding x;
    if (!tightest) {
        // Within the limit as the site counts, over it as another mode would: said, not judged.
        if (!site || !other_over) return;
        x.kind = "limit_other_mode";
        x.severity = Severity::info;
        x.title = fmt::format("within the limit as the site counts; {} would be over it by {} "
                              "if the site counted it",
                              other_over->name,
                              size_text(saturating_sub(0, *other_over->judged_margin_kb())));
        x.evidence = std::move(evidence);
        x.advice = "nothing to change while the site counts as it does";
        x.figure_name = "margin_kb";
        x.figure = static_cast<double>(*other_over->judged_margin_kb());
        x.figure_unit = "KiB";
        out.push_back(std::move(x));
        return;
    }
    const Kib margin = tightest->judged_margin_kb();
    const bool over = *margin < 0;
    const bool node = tightest->node && tightest->node->counted_kb;
    x.kind = "limit_near";
    x.severity =
        over && tightest->site_role != "accounted" ? Severity::critical : Severity::warning;
    const std::string who =
        node ? fmt::format("the {} tasks of step {} on this node count {}", tightest->node->tasks,
                           step_name(c.data), tightest->name)
             : tightest->name + " counts";
    x.title = fmt::format(
        "{} the limit: {} {} at its peak, {} {} the {} limit ({}): {}", over ? "over" : "near", who,
        size_text(saturating_sub(*tightest->limit.kb, *margin)),
        size_text(over ? saturating_sub(0, *margin) : *margin), over ? "above" : "below",
        size_text(*tightest->limit.kb), tightest->limit.source, tightest->at_limit);
    x.evidence = std::move(evidence);
    if (!c.data.cgroup.empty()) {
        const CgroupSample& last = c.data.cgroup.back().sample;
        if (last.anon && last.file)
            x.evidence.push_back(fmt::format(
                "in the cgroup at the end: file pages {} will be reclaimed first; anonymous {} is "
                "what can be OOM-killed",
                size_text(*last.file), size_text(*last.anon)));
        if (last.failcnt && *last.failcnt > 0)
            x.evidence.push_back(
                fmt::format("the cgroup hit its limit {} times (failcnt)", *last.failcnt));
        if (last.oom_kill && *last.oom_kill > 0)
            x.evidence.push_back(
                fmt::format("the OOM killer killed {} processes in the cgroup", *last.oom_kill));
    }
    x.advice = "raise the limit, or lower what that view counts (see the other findings for what "
               "it is made of)";
    x.from_ms = x.to_ms = node ? tightest->node->peak_ms : tightest->peak_ms;
    if (tightest->peak_process_id) x.process_ids = {*tightest->peak_process_id};
    x.figure_name = "margin_kb";
    x.figure = static_cast<double>(*margin);
    x.figure_unit = "KiB";
    out.push_back(std::move(x));
}

void kill_findings(const Context& c, std::vector<Finding>& out) {
    const RecordingEnd& end = c.report.end;
    if (end.state != RecordingEnd::State::cut || end.signal) return;
    const Diagnosis& d = c.diagnosis;
    // The figure that most likely killed it: the site's enforced one; not known, the one whose
    // last sample came closest to its limit.
    const SchedulerView* view = nullptr;
    double closest = 0;
    const SeriesPoint* last = nullptr;
    for (const SchedulerView& v : d.schedulers) {
        if (!v.limit.kb || *v.limit.kb <= 0 || (d.site.known() && v.site_role != "enforced"))
            continue;
        const bool node = v.node && v.node->counted_kb;
        const auto& points = node ? v.node->points : v.points;
        const Kib share = node ? v.node->recorders_kb : v.recorder_kb;
        auto it = std::find_if(points.rbegin(), points.rend(),
                               [](const SeriesPoint& p) { return p.value.has_value(); });
        if (it == points.rend()) continue;
        const double used = static_cast<double>(saturating_add(*it->value, share.value_or(0))) /
                            static_cast<double>(*v.limit.kb);
        if (!view || used > closest) {
            view = &v;
            closest = used;
            last = &*it;
        }
    }
    if (!view || closest < 0.5) return;
    const bool node = view->node && view->node->counted_kb;
    const auto& points = node ? view->node->points : view->points;
    const std::int64_t counted = saturating_add(
        *last->value, (node ? view->node->recorders_kb : view->recorder_kb).value_or(0));
    // The ramp over the last second before the last sample.
    const SeriesPoint* before = nullptr;
    for (const SeriesPoint& p : points)
        if (p.value && p.t_ms <= last->t_ms - 1000) before = &p;
    Finding x;
    x.kind = "killed_near_limit";
    x.severity = Severity::critical;
    x.title = fmt::format(
        "killed outright at {:.1f} s (the recording was cut, no signal came first): most likely "
        "{} reached the {} limit ({}): {}",
        last->t_ms / 1000.0, view->name, size_text(*view->limit.kb), view->limit.source,
        view->at_limit);
    x.evidence.push_back(
        fmt::format("the last sample, at {:.1f} s, counted {} = {:.2f} x the limit",
                    last->t_ms / 1000.0, size_text(counted), closest));
    if (before && *before->value < *last->value && last->t_ms > before->t_ms) {
        const double rate_kb_s = static_cast<double>(*last->value - *before->value) * 1000.0 /
                                 static_cast<double>(last->t_ms - before->t_ms);
        const std::int64_t short_kb = saturating_sub(*view->limit.kb, counted);
        x.evidence.push_back(fmt::format(
            "it rose {}/s over the last {:.1f} s before it{}: the last sample may be well below "
            "what the site saw when it killed",
            size_text(static_cast<std::int64_t>(rate_kb_s)), (last->t_ms - before->t_ms) / 1000.0,
            short_kb > 0 ? fmt::format("; at that rate it reached the limit {:.0f} ms later",
                                       1000.0 * static_cast<double>(short_kb) / rate_kb_s)
                         : std::string()));
        x.figure_name = "ramp_kb_per_s"; // "ramp: 258.5 MiB/s"
        x.figure = rate_kb_s;
        x.figure_unit = "KiB/s";
    }
    x.evidence.push_back(
        "the final second is not in the recording: a kill by SIGKILL (OverMemoryKill, the OOM "
        "killer) ends the recorder with the step and leaves it no moment to write");
    x.advice = "raise the limit, or lower what that view counts (the other findings say what it "
               "is made of)";
    x.from_ms = x.to_ms = last->t_ms;
    out.push_back(std::move(x));
}

} // namespace loaderlens::diagnosis
