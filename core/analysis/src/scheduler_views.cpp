// SPDX-License-Identifier: MIT
// What each scheduler counts (../shared/notes/kernel-notes.md, measured against a real SLURM
// 22.05 here) as a series per tick, and the limit each is held against.
#include "diagnosis_parts.hpp"

#include <algorithm>
#include <charconv>
#include <map>

namespace loaderlens::diagnosis {

namespace {

std::optional<std::int64_t> positive_meta(const RecordingData& data, const std::string& key) {
    const auto value = meta_number(data, key);
    return value && *value > 0 ? value : std::nullopt;
}

// A per-process figure summed over the tree at each tick of its tier (series(): the one per-tick
// sum), with the process that held the most of it at the peak tick.
void per_process_view(const RecordingData& data, Figure figure, SchedulerView& view) {
    std::vector<TickTop> tops;
    Series sums = series(data, {.figure = figure, .selector = Selector::tree()}, &tops);
    for (std::size_t i = 0; i < sums.points.size(); ++i)
        if (sums.points[i].value && sums.peak && *sums.points[i].value == *sums.peak &&
            sums.points[i].t_ms == sums.peak_ms) {
            view.peak_process_id = tops[i].process_id;
            view.peak_process_kb = tops[i].kb;
            break;
        }
    view.points = std::move(sums.points);
    view.peak = sums.peak;
    view.peak_ms = sums.peak_ms;
    if (!view.peak) return;
    // Each lane's share of the peak: its processes' figures at the peak tick, summed.
    std::map<std::string, SchedulerView::Holder> lanes;
    std::map<std::int64_t, const ProcessInfo*> by_id;
    for (const ProcessInfo& p : data.processes)
        by_id[p.id] = &p;
    for (const TickTop& held : values_at_tick(data, figure, view.peak_ms)) {
        const auto found = by_id.find(held.process_id);
        if (found == by_id.end() || !held.kb) continue;
        const ProcessInfo* p = found->second;
        const std::string what = p->role == Role::worker   ? "worker " + std::to_string(p->slot)
                                 : p->role == Role::helper ? std::string("helpers")
                                                           : std::string(to_string(p->role));
        SchedulerView::Holder& lane = lanes[what];
        lane.what = what;
        lane.kb = saturating_add(lane.kb.value_or(0), *held.kb);
        ++lane.processes;
    }
    for (auto& [what, lane] : lanes)
        view.holders.push_back(std::move(lane));
    std::stable_sort(view.holders.begin(), view.holders.end(),
                     [](const auto& a, const auto& b) { return *a.kb > *b.kb; });
}

// What the cgroup held at the view's peak tick, by what memory.stat splits it into.
void cgroup_holders(const RecordingData& data, const std::string& key, SchedulerView& view) {
    if (!view.peak) return;
    const CgroupSample* at_peak = nullptr;
    for (const auto& [t, c] : data.cgroup)
        if (t == view.peak_ms) at_peak = &c;
    if (!at_peak) return;
    const CgroupSample& c = *at_peak;
    // v1's total_rss (slurm_cgroup) is the anon part alone; the working set leaves inactive out.
    const bool anon_only = key == "slurm_cgroup" && c.version != "v2";
    std::vector<SchedulerView::Holder> parts{{"anon", c.anon}};
    if (!anon_only) {
        parts.push_back({"active file", c.active_file});
        if (key != "k8s_working_set") parts.push_back({"inactive file", c.inactive_file});
        parts.push_back({"shmem", c.shmem});
    }
    for (auto& part : parts)
        if (part.kb && *part.kb > 0) view.holders.push_back(std::move(part));
    std::stable_sort(view.holders.begin(), view.holders.end(),
                     [](const auto& a, const auto& b) { return *a.kb > *b.kb; });
}

template <typename Get> void cgroup_view(const RecordingData& data, Get get, SchedulerView& view) {
    for (const auto& [t, c] : data.cgroup) {
        const Kib value = get(c);
        view.points.push_back({t, value, value, value, !value});
        if (value && (!view.peak || *value > *view.peak)) {
            view.peak = value;
            view.peak_ms = t;
        }
    }
}

std::string short_view_name(const std::string& key, const std::string& cgroup_version) {
    if (key == "slurm_linux") return "SLURM linux: Σ RSS";
    if (key == "slurm_usepss") return "SLURM UsePss: Σ PSS";
    if (key == "slurm_noshared") return "SLURM NoShared: Σ anon";
    if (key == "slurm_cgroup")
        return cgroup_version == "v2" ? "SLURM cgroup plugin" : "SLURM cgroup: anon";
    if (key == "cgroup_usage") return "cgroup usage";
    if (key == "k8s_working_set") return "Kubernetes working set";
    return key;
}

std::int64_t longest_interval(const ReportData* report, const std::string& tier) {
    if (!report) return 0;
    for (const TierSummary& s : report->tiers)
        if (s.tier == tier) return s.longest_ms;
    return 0;
}

Kib difference(const Kib& a, const Kib& b) {
    if (!a || !b) return std::nullopt;
    return std::max<std::int64_t>(0, saturating_sub(*a, *b));
}

// The site's roles, SLURM's polls, and the site's figures first (docs/slurm.md, "Modes").
void apply_site(const SiteAccounting& site, std::vector<SchedulerView>& views) {
    for (SchedulerView& view : views) {
        if (site.known() && view.key == site.view) {
            view.site_role = site.kills ? "enforced" : "accounted";
            if (!site.kills && view.key.starts_with("slurm_"))
                view.at_limit = "SLURM records it (sacct MaxRSS); without OverMemoryKill in "
                                "JobAcctGatherParams it kills nothing";
        } else if (site.known() && view.key == "cgroup_usage" && view.limit.kb &&
                   view.limit.source.starts_with("cgroup")) {
            view.site_role = "enforced"; // the kernel holds a cgroup to its own limit
        }
        if (site.poll_s && *site.poll_s > 0 && view.key.starts_with("slurm_")) {
            const bool node = view.node && view.node->counted_kb;
            const Kib recorders = node ? view.node->recorders_kb : view.recorder_kb;
            Kib over;
            if (view.limit.kb) over = saturating_sub(*view.limit.kb, recorders.value_or(0));
            view.polled = polled_peak(node ? view.node->points : view.points, *site.poll_s, over);
        }
    }
    if (!site.known()) return;
    std::stable_partition(views.begin(), views.end(),
                          [](const SchedulerView& v) { return v.site_role == "enforced"; });
    std::stable_partition(views.begin(), views.end(),
                          [](const SchedulerView& v) { return !v.site_role.empty(); });
}

} // namespace

void read_recorder_size(const RecordingData& data, Diagnosis& d) {
    d.recorder_peak_rss_kb = meta_number(data, "recorder_peak_rss_kb");
    d.recorder_pss_kb = meta_number(data, "recorder_pss_kb");
    d.recorder_anon_kb = meta_number(data, "recorder_anon_kb");
}

MemoryLimit resolve_limit(const RecordingData& data, const DiagnosisOptions& options) {
    if (options.mem_limit_kb) return {options.mem_limit_kb, "--mem-limit"};
    if (auto kb = positive_meta(data, "mem_limit_kb")) return {kb, "--mem-limit (record)"};
    // A step's own `srun --mem` is its limit; SLURM_MEM_PER_NODE keeps the job's (kernel-notes).
    if (auto kb = positive_meta(data, "slurm_step_mem_kb"))
        return {kb, "the step's memory (scontrol show step)"};
    if (auto mib = positive_meta(data, "slurm_mem_per_node"))
        return {saturating_mul(*mib, 1024), "SLURM_MEM_PER_NODE"};
    if (auto mib = positive_meta(data, "slurm_mem_per_cpu")) {
        if (auto cpus = positive_meta(data, "slurm_cpus_on_node"))
            return {saturating_mul(saturating_mul(*mib, *cpus), 1024),
                    "SLURM_MEM_PER_CPU x SLURM_CPUS_ON_NODE"};
    }
    for (auto it = data.cgroup.rbegin(); it != data.cgroup.rend(); ++it)
        if (it->sample.limit && !it->sample.unlimited)
            return {it->sample.limit,
                    "cgroup " + it->sample.version + " " +
                        (it->sample.version == "v2" ? "memory.max" : "memory.limit_in_bytes")};
    return {};
}

std::vector<SchedulerView> scheduler_views(const RecordingData& data, const ReportData* report,
                                           const Diagnosis& diagnosis,
                                           const DiagnosisOptions& options) {
    std::vector<SchedulerView> views;
    const std::int64_t fast_ms = longest_interval(report, "fast"),
                       rollup_ms = longest_interval(report, "rollup"),
                       cgroup_ms = longest_interval(report, "cgroup");
    const Kib recorder_rss = diagnosis.recorder_peak_rss_kb;
    const std::string cgroup_version =
        data.cgroup.empty() ? std::string() : data.cgroup.back().sample.version;

    SchedulerView linux_view{"slurm_linux", "SLURM jobacct_gather/linux",
                             "Σ RSS of the step's processes", "statm RSS, summed per fast tick",
                             "OverMemoryKill kills the step (every process, the recorder too)"};
    per_process_view(data, Figure::rss, linux_view);
    linux_view.interval_ms = fast_ms;
    linux_view.recorder_kb = recorder_rss;
    views.push_back(std::move(linux_view));

    SchedulerView pss_view{"slurm_usepss", "SLURM jobacct_gather/linux UsePss",
                           "Σ PSS of the step's processes", "smaps_rollup Pss, summed per tick",
                           "OverMemoryKill kills the step"};
    per_process_view(data, Figure::pss, pss_view);
    pss_view.interval_ms = rollup_ms;
    pss_view.recorder_kb = diagnosis.recorder_pss_kb;
    views.push_back(std::move(pss_view));

    SchedulerView noshared{"slurm_noshared", "SLURM jobacct_gather/linux NoShared",
                           "Σ (RSS - shared) = Σ RssAnon", "status RssAnon, summed per fast tick",
                           "OverMemoryKill kills the step"};
    per_process_view(data, Figure::rss_noshared, noshared);
    noshared.interval_ms = fast_ms;
    noshared.recorder_kb = diagnosis.recorder_anon_kb;
    views.push_back(std::move(noshared));

    const bool v2 = cgroup_version == "v2";
    SchedulerView slurm_cgroup{"slurm_cgroup", "SLURM jobacct_gather/cgroup",
                               v2 ? "the cgroup's memory.current, page cache included"
                                  : "the cgroup's total_rss: anonymous memory only",
                               v2 ? "cgroup memory.current" : "cgroup v1 memory.stat total_rss",
                               "reported only; the limit is enforced by task/cgroup (next line)"};
    if (v2)
        cgroup_view(
            data, [](const CgroupSample& c) { return c.usage; }, slurm_cgroup);
    else
        cgroup_view(
            data, [](const CgroupSample& c) { return c.anon; }, slurm_cgroup);
    views.push_back(std::move(slurm_cgroup));

    SchedulerView usage{"cgroup_usage", "cgroup usage (task/cgroup, the kernel)",
                        "everything charged to the cgroup, page cache included",
                        v2 ? "memory.current" : "memory.usage_in_bytes",
                        "file pages are reclaimed first; then the OOM killer kills in the cgroup"};
    cgroup_view(
        data, [](const CgroupSample& c) { return c.usage; }, usage);
    views.push_back(std::move(usage));

    SchedulerView k8s{"k8s_working_set", "Kubernetes working set",
                      "cgroup usage - inactive_file (active mapped dataset pages count)",
                      "usage minus memory.stat inactive_file", "the kubelet evicts the pod"};
    cgroup_view(
        data, [](const CgroupSample& c) { return difference(c.usage, c.inactive_file); }, k8s);
    views.push_back(std::move(k8s));

    for (SchedulerView& view : views) {
        const bool cgroup = view.key == "slurm_cgroup" || view.key == "cgroup_usage" ||
                            view.key == "k8s_working_set";
        view.short_name = short_view_name(view.key, cgroup_version);
        if (cgroup) {
            cgroup_holders(data, view.key, view);
            view.interval_ms = cgroup_ms;
            // The recorder runs in the cgroup: its memory is in the figure already.
            view.recorder_kb = std::nullopt;
            view.recorder_in_figure = true;
        }
        view.samples = static_cast<int>(
            std::count_if(view.points.begin(), view.points.end(),
                          [](const SeriesPoint& p) { return p.value.has_value(); }));
        if (!view.peak)
            view.unavailable = view.points.empty() ? (cgroup ? "no memory cgroup was readable"
                                                             : "no sample of this figure")
                                                   : "the figure was unavailable at every sample";
        view.limit = diagnosis.limit;
        // The cgroup views are held against the cgroup's own limit, which the kernel enforces
        // (under task/cgroup SLURM sets it to --mem), else only against a limit given with
        // --mem-limit: a SLURM variable says nothing of a cgroup without a limit.
        if (cgroup) {
            const CgroupSample* last = data.cgroup.empty() ? nullptr : &data.cgroup.back().sample;
            // A cgroup that held half its peak before the command is not the job's own (a
            // session's, a container's): a limit given for the job says nothing about it.
            const Kib before = data.cgroup.empty() ? Kib{} : data.cgroup.front().sample.usage;
            if (before && view.peak && saturating_mul(*before, 2) >= *view.peak &&
                view.limit.source.starts_with("--mem-limit"))
                view.limit = {};
            if (last && last->limit && !last->unlimited &&
                (!view.limit.kb || *last->limit < *view.limit.kb ||
                 !view.limit.source.starts_with("--mem-limit")))
                view.limit = {last->limit,
                              "cgroup " + last->version + " " +
                                  (last->version == "v2" ? "memory.max" : "memory.limit_in_bytes")};
            else if (!view.limit.source.starts_with("--mem-limit"))
                view.limit = {};
        }
        if (view.peak) view.counted_kb = saturating_add(*view.peak, view.recorder_kb.value_or(0));
        if (view.counted_kb && view.limit.kb)
            view.margin_kb = saturating_sub(*view.limit.kb, *view.counted_kb);
    }
    node_sums(data, options, report, views);
    apply_site(diagnosis.site, views);
    return views;
}

} // namespace loaderlens::diagnosis

namespace loaderlens {

std::vector<SchedulerView> scheduler_series(const RecordingData& data) {
    Diagnosis none;
    none.limit = diagnosis::resolve_limit(data, {});
    return diagnosis::scheduler_views(data, nullptr, none, {});
}

std::vector<SchedulerView> task_views(const RecordingData& data) {
    Diagnosis d;
    d.limit = diagnosis::resolve_limit(data, {});
    diagnosis::read_recorder_size(data, d);
    return diagnosis::scheduler_views(data, nullptr, d, {});
}

} // namespace loaderlens
