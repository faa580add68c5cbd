// SPDX-License-Identifier: MIT
#include "diagnosis_json.hpp"

#include "json_util.hpp"

namespace loaderlens::json_util {

namespace {

using nlohmann::json;

json limit_json(const MemoryLimit& limit) {
    return {{"kib", optional(limit.kb)}, {"source", limit.kb ? json(limit.source) : json(nullptr)}};
}

json polled_json(const SchedulerView& v) {
    if (!v.polled) return nullptr;
    const SchedulerView::Polled& p = *v.polled;
    return {{"period_s", p.period_s},
            {"likely_kib", optional(p.likely_kb)},
            {"low_kib", optional(p.low_kb)},
            {"high_kib", optional(p.high_kb)},
            {"phases", p.phases},
            {"phases_over", p.phases_over}};
}

json node_json(const SchedulerView& v) {
    if (!v.node) return nullptr;
    const SchedulerView::NodeSum& n = *v.node;
    json points = json::array();
    for (const SeriesPoint& p : n.points)
        points.push_back({p.t_ms, optional(p.value), p.partial});
    return {{"tasks", n.tasks},
            {"recorded", n.recorded},
            {"peak_kib", optional(n.peak)},
            {"peak_ms", n.peak ? json(n.peak_ms) : json(nullptr)},
            {"recorders_kib", optional(n.recorders_kb)},
            {"counted_kib", optional(n.counted_kb)},
            {"margin_kib", optional(n.margin_kb)},
            {"points", std::move(points)}};
}

json view_json(const SchedulerView& v) {
    json holders = json::array();
    for (const SchedulerView::Holder& h : v.holders)
        holders.push_back({{"what", h.what}, {"kib", optional(h.kb)}, {"processes", h.processes}});
    json points = json::array();
    for (const SeriesPoint& p : v.points)
        points.push_back({p.t_ms, optional(p.value), p.partial});
    return {{"key", v.key},
            {"name", v.name},
            {"counts", v.counts},
            {"source", v.source},
            {"at_limit", v.at_limit},
            {"peak_kib", optional(v.peak)},
            {"peak_ms", v.peak ? json(v.peak_ms) : json(nullptr)},
            {"peak_process_id", optional(v.peak_process_id)},
            {"peak_process_kib", optional(v.peak_process_kb)},
            {"holders", std::move(holders)}, // the text report's first screen has them too
            {"interval_ms", v.interval_ms},
            {"samples", v.samples},
            {"recorder_kib", optional(v.recorder_kb)},
            {"recorder_in_figure", v.recorder_in_figure},
            {"counted_kib", optional(v.counted_kb)},
            {"limit", limit_json(v.limit)},
            {"margin_kib", optional(v.margin_kb)},
            {"unavailable", v.unavailable.empty() ? json(nullptr) : json(v.unavailable)},
            {"site_role", v.site_role.empty() ? json(nullptr) : json(v.site_role)},
            {"polled", polled_json(v)},
            {"node", node_json(v)},
            {"points", std::move(points)}};
}

json site_json(const Diagnosis& d) {
    const SiteAccounting& s = d.site;
    return {{"view", s.view.empty() ? json(nullptr) : json(s.view)},
            {"kills", s.kills},
            {"cgroup_enforced", s.cgroup_enforced},
            {"poll_s", optional(s.poll_s)},
            {"source", s.source.empty() ? json(nullptr) : json(s.source)},
            {"unavailable", s.unavailable.empty() ? json(nullptr) : json(s.unavailable)},
            {"jobacct_gather_type", s.gather_type},
            {"jobacct_gather_params", s.gather_params},
            {"node_tasks", d.node_tasks},
            {"node_tasks_found", d.node_tasks_found},
            {"node_tasks_missing", d.node_tasks_missing}};
}

json growth_json(const SlotGrowth& g) {
    json figures = json::array();
    for (const GrowthFigure& f : g.figures) {
        json at_end = json::array();
        for (const Kib& v : f.at_epoch_end)
            at_end.push_back(optional(v));
        figures.push_back({{"figure", f.figure},
                           {"path", f.path.empty() ? json(nullptr) : json(f.path)},
                           {"at_epoch_end_kib", std::move(at_end)},
                           {"growth_per_epoch_kib", optional(f.growth_per_epoch_kb())},
                           {"monotone", f.monotone},
                           {"trend", f.trend_first ? json{{"from_ms", *f.trend_from_ms},
                                                          {"to_ms", *f.trend_to_ms},
                                                          {"first_kib", *f.trend_first},
                                                          {"last_kib", optional(f.trend_last)}}
                                                   : json(nullptr)}});
    }
    return {{"slot", g.slot >= 0 ? json(g.slot) : json(nullptr)},
            {"label", g.label},
            {"generations", g.generations},
            {"figures", std::move(figures)}};
}

json finding_json(const Finding& f) {
    return {{"kind", f.kind},
            {"severity", to_string(f.severity)},
            {"title", f.title},
            {"evidence", f.evidence},
            {"advice", f.advice},
            {"process_ids", f.process_ids},
            {"slot", f.slot >= 0 ? json(f.slot) : json(nullptr)},
            {"file", f.file.empty() ? json(nullptr) : json(f.file)},
            {"from_ms", f.from_ms},
            {"to_ms", f.to_ms},
            {"figure", {{"name", f.figure_name}, {"value", f.figure}, {"unit", f.figure_unit}}},
            {"part", f.part.empty() ? json(nullptr) : json(f.part)}}; // merged recordings
}

} // namespace

void add_diagnosis(json& out, const Diagnosis& d) {
    out["limit"] = limit_json(d.limit);
    out["recorder"] = {{"peak_rss_kib", optional(d.recorder_peak_rss_kb)},
                       {"pss_kib", optional(d.recorder_pss_kb)},
                       {"anon_kib", optional(d.recorder_anon_kb)}};
    out["cgroup_before_kib"] = optional(d.cgroup_before_kb);
    out["cgroup_at_peak"] =
        d.cgroup_at_peak ? json{{"anon_kib", optional(d.cgroup_at_peak->anon)},
                                {"active_file_kib", optional(d.cgroup_at_peak->active_file)},
                                {"inactive_file_kib", optional(d.cgroup_at_peak->inactive_file)},
                                {"shmem_kib", optional(d.cgroup_at_peak->shmem)},
                                {"usage_kib", optional(d.cgroup_at_peak->usage)}}
                         : json(nullptr);
    out["site"] = site_json(d);
    out["schedulers"] = json::array();
    for (const SchedulerView& v : d.schedulers)
        out["schedulers"].push_back(view_json(v));
    json epochs = json::array();
    for (const Epoch& e : d.epochs)
        epochs.push_back({{"number", e.number}, {"start_ms", e.start_ms}, {"end_ms", e.end_ms}});
    out["epochs"] = {{"source", d.epochs_source.empty() ? json(nullptr) : json(d.epochs_source)},
                     {"list", std::move(epochs)}};
    out["growth"] = json::array();
    for (const SlotGrowth& g : d.growth)
        out["growth"].push_back(growth_json(g));
    json gap = json::array();
    for (const GapShare& g : d.gap)
        gap.push_back({{"cause", g.cause}, {"what", g.what}, {"kib", g.gap_kb}});
    out["rss_pss_gap"] = {{"t_ms", d.gap_total_kb ? json(d.gap_ms) : json(nullptr)},
                          {"kib", optional(d.gap_total_kb)},
                          {"causes", std::move(gap)}};
    out["findings"] = json::array();
    for (const Finding& f : d.findings)
        out["findings"].push_back(finding_json(f));
}

} // namespace loaderlens::json_util
