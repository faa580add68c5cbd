// SPDX-License-Identifier: MIT
#include "loaderlens/live_metrics.hpp"

#include "loaderlens/report.hpp"
#include "loaderlens/residency_generations.hpp"
#include "metric_set.hpp"

#include <algorithm>

namespace loaderlens {

namespace {

using namespace metrics;

// Keeps the rows of the latest tick: a tier run's rows share their time and are written in one
// transaction, so a read never ends inside a tick.
template <typename Sample>
void keep_latest_tick(const std::vector<Timed<Sample>>& rows, std::int64_t& tick,
                      std::vector<Sample>& kept, std::int64_t& last_sample_ms) {
    for (const auto& [t, sample] : rows) {
        if (t > tick) {
            tick = t;
            kept.clear();
        }
        if (t == tick) kept.push_back(sample);
        last_sample_ms = std::max(last_sample_ms, t);
    }
}

void add_to(Kib& sum, const Kib& value) {
    if (value) sum = saturating_add(sum.value_or(0), *value);
}

} // namespace

void LiveMetrics::add(const RecordingData& newer) {
    if (!newer.meta.empty()) meta_ = newer.meta; // the whole table, each time it changed
    for (const ProcessInfo& p : newer.processes)
        processes_[p.id] = {p.role, p.slot};
    keep_latest_tick(newer.fast, fast_t_, fast_, last_sample_ms_);
    keep_latest_tick(newer.rollup, rollup_t_, rollup_, last_sample_ms_);
    if (!newer.cgroup.empty()) cgroup_ = newer.cgroup.back().sample;
    for (const auto& row : newer.cgroup)
        last_sample_ms_ = std::max(last_sample_ms_, row.t_ms);
    for (const auto& row : newer.system)
        last_sample_ms_ = std::max(last_sample_ms_, row.t_ms);
    for (const ResidencyFile& f : newer.residency_files)
        files_[f.id] = f;
    for (const auto& [t, c] : newer.cache_residency) {
        FileNow& now = file_now_[c.file_id];
        if (t < now.cache_t) continue;
        now.cache_t = t;
        now.cached_pages = c.totals.cached;
    }
    for (const auto& [t, m] : newer.mapped_residency) {
        FileNow& now = file_now_[m.file_id];
        if (t < now.mapped_t) continue;
        if (t > now.mapped_t) { // a new run: its sums start again
            now.mapped_t = t;
            now.present_pages = 0;
            now.pss.reset();
        }
        now.present_pages = saturating_add(now.present_pages, m.present_pages);
        add_to(now.pss, m.pss_kb);
        last_sample_ms_ = std::max(last_sample_ms_, t);
    }

    // The scheduler views over the new ticks, as the report computes them (its limit from the
    // meta and the cgroup): each view's latest value, and its peak over every tick read.
    if (newer.fast.empty() && newer.rollup.empty() && newer.cgroup.empty()) return;
    RecordingData ticks;
    ticks.meta = meta_;
    ticks.fast = newer.fast;
    ticks.rollup = newer.rollup;
    ticks.cgroup = newer.cgroup;
    const std::vector<SchedulerView> views = scheduler_series(ticks);
    for (const SchedulerView& v : views) {
        auto it = std::find_if(views_.begin(), views_.end(),
                               [&](const View& kept) { return kept.key == v.key; });
        if (it == views_.end()) it = views_.insert(views_.end(), View{v.key, {}, {}, {}});
        if (v.points.empty()) continue; // no tick of its tier in this read
        it->current = v.points.back().value;
        if (v.peak && (!it->peak || *v.peak > *it->peak)) it->peak = v.peak;
        it->limit = v.limit.kb;
    }
}

std::string LiveMetrics::textfile(bool live) const {
    MetricSet set(MetricSet::Keep::latest);
    const Labels base = recording_labels(meta_);
    auto meta = [&](const char* key) {
        auto it = meta_.find(key);
        return it == meta_.end() ? std::string() : it->second;
    };
    set.add(Family::recording_info,
            with(base, {{"kernel", meta("kernel")}, {"version", meta("tool_version")}}), "1");
    set.add(Family::recording_live, base, live ? "1" : "0");
    if (auto start = start_unix_ms(meta_); start && last_sample_ms_ >= 0)
        set.add(Family::sample_timestamp, base, seconds(*start + last_sample_ms_));

    // Per role and slot: a worker slot's process, main, the helpers summed; at the latest tick.
    std::map<std::pair<Role, int>, std::array<Kib, process_figures.size()>> groups;
    std::array<Kib, tree_figures.size()> tree{};
    auto fold = [&](const auto& sample, FigureSource source) {
        auto p = processes_.find(sample.process_id);
        if (p == processes_.end()) return; // not listed (yet): no role to put it under
        auto& group =
            groups[{p->second.role, p->second.role == Role::worker ? p->second.slot : -1}];
        for (std::size_t i = 0; i < process_figures.size(); ++i)
            if (source_of(process_figures[i].figure) == source)
                add_to(group[i], figure_of(sample, process_figures[i].figure));
        for (std::size_t i = 0; i < tree_figures.size(); ++i)
            if (source_of(tree_figures[i].figure) == source)
                add_to(tree[i], figure_of(sample, tree_figures[i].figure));
    };
    for (const FastSample& s : fast_)
        fold(s, FigureSource::fast);
    for (const RollupSample& s : rollup_)
        fold(s, FigureSource::rollup);
    for (const auto& [key, figures] : groups) {
        const Labels labels = process_labels(base, key.first, key.second);
        for (std::size_t i = 0; i < process_figures.size(); ++i)
            set.add(process_figures[i].family, labels, bytes(figures[i]));
    }
    for (std::size_t i = 0; i < tree_figures.size(); ++i)
        set.add(tree_figures[i].family, base, bytes(tree[i]));

    for (const View& v : views_) {
        const Labels labels = with(base, {{"view", v.key}});
        set.add(Family::scheduler, labels, bytes(v.current));
        set.add(Family::scheduler_peak, labels, bytes(v.peak));
        set.add(Family::scheduler_limit, labels, bytes(v.limit));
    }
    if (cgroup_) {
        set.add(Family::cgroup_usage, base, bytes(cgroup_->usage));
        set.add(Family::cgroup_limit, base,
                cgroup_->unlimited ? std::nullopt : bytes(cgroup_->limit));
    }
    // A file that grew while followed has a generation per size: only the latest one's figures
    // are current (residency_generations.hpp).
    std::vector<ResidencyFile> known;
    for (const auto& [id, f] : files_)
        known.push_back(f);
    const std::map<std::int64_t, std::int64_t> latest = latest_generations(known);
    for (const auto& [id, now] : file_now_) {
        auto f = files_.find(id);
        if (f == files_.end() || latest.at(id) != id) continue;
        const Labels labels = with(base, {{"file", f->second.path}});
        const std::int64_t page = f->second.page_size;
        if (now.cached_pages && f->second.method != CacheMethod::unavailable)
            set.add(Family::file_cached, labels,
                    std::to_string(saturating_mul(*now.cached_pages, page)));
        if (now.mapped_t >= now.cache_t) {
            set.add(Family::file_rss, labels,
                    std::to_string(saturating_mul(now.present_pages, page)));
            set.add(Family::file_pss, labels, bytes(now.pss));
        } else { // the latest run read its page cache and found no process of the tree mapping it
            set.add(Family::file_rss, labels, "0");
            set.add(Family::file_pss, labels, "0");
        }
    }
    return set.render(TextFormat::prometheus);
}

} // namespace loaderlens
