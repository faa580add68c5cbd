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

// Fast ticks kept for the rollup tick still to come: about 6 s at the nominal 10 Hz (a rollup
// tick older than all of them takes the oldest).
constexpr std::size_t kept_fast_ticks = 64;

// The recorder's share of a view, as the report adds it (scheduler_views.cpp): its peak RSS to
// Σ RSS, its PSS to Σ PSS, its RssAnon to NoShared; a cgroup view has it in the figure.
Kib recorder_share(const std::string& key, const RecorderFootprint& r, bool peak) {
    if (key == "slurm_linux") return peak ? r.peak_rss : r.rss;
    if (key == "slurm_usepss") return r.pss;
    if (key == "slurm_noshared") return r.anon;
    return {};
}

Kib plus(const Kib& figure, const Kib& share) {
    if (!figure) return {};
    return saturating_add(*figure, share.value_or(0));
}

} // namespace

void LiveMetrics::add(const RecordingData& newer) {
    if (!newer.meta.empty()) meta_ = newer.meta; // the whole table, each time it changed
    for (const ProcessInfo& p : newer.processes)
        processes_[p.id] = {p.role, p.slot};
    for (const auto& [t, sample] : newer.fast) {
        if (fast_.empty() || t > fast_.back().t) fast_.push_back({t, {}});
        if (t == fast_.back().t) fast_.back().rows.push_back(sample);
        last_sample_ms_ = std::max(last_sample_ms_, t);
    }
    keep_latest_tick(newer.rollup, rollup_t_, rollup_, last_sample_ms_);
    // The fast tick in effect at the latest rollup tick and those after (for the next one); a
    // rollup tick comes in a later read than the fast ticks after it, often.
    while (fast_.size() > 1 && rollup_t_ >= 0 && fast_[1].t <= rollup_t_)
        fast_.pop_front();
    while (fast_.size() > kept_fast_ticks)
        fast_.pop_front();
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
        if (it == views_.end())
            it = views_.insert(views_.end(), View{v.key, {}, {}, {}, v.recorder_in_figure});
        if (v.points.empty()) continue; // no tick of its tier in this read
        it->current = v.points.back().value;
        if (v.peak && (!it->peak || *v.peak > *it->peak)) it->peak = v.peak;
        it->limit = v.limit.kb;
    }
}

std::string LiveMetrics::textfile(bool live, std::optional<std::int64_t> written_unix_ms) const {
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
    if (written_unix_ms) set.add(Family::textfile_write_timestamp, base, seconds(*written_unix_ms));
    set.add(Family::recorder_rss, base, bytes(recorder_.rss));
    set.add(Family::recorder_peak_rss, base, bytes(recorder_.peak_rss));
    set.add(Family::recorder_pss, base, bytes(recorder_.pss));
    set.add(Family::recorder_rss_anon, base, bytes(recorder_.anon));

    // Per role and slot: a worker slot's process, main, the helpers summed; at the latest tick.
    std::map<std::pair<Role, int>, std::array<Kib, process_figures.size()>> groups;
    std::array<Kib, tree_figures.size()> tree{};
    auto fold = [&](const auto& sample, FigureSource source, bool to_group, bool to_tree) {
        auto p = processes_.find(sample.process_id);
        if (p == processes_.end()) return; // not listed (yet): no role to put it under
        auto& group =
            groups[{p->second.role, p->second.role == Role::worker ? p->second.slot : -1}];
        for (std::size_t i = 0; i < process_figures.size() && to_group; ++i)
            if (source_of(process_figures[i].figure) == source)
                add_to(group[i], figure_of(sample, process_figures[i].figure));
        for (std::size_t i = 0; i < tree_figures.size() && to_tree; ++i)
            if (source_of(tree_figures[i].figure) == source)
                add_to(tree[i], figure_of(sample, tree_figures[i].figure));
    };
    // The tree's Σ RSS at the fast tick in effect at the latest rollup tick, with Σ PSS and Σ USS
    // of that rollup tick: one moment, one set of processes. The latest fast tick alone, after
    // the workers had exited, gave Σ PSS (of a rollup tick that still had them) > Σ RSS.
    const FastTick* tree_tick = fast_.empty() ? nullptr : &fast_.back();
    if (rollup_t_ >= 0 && !fast_.empty()) {
        tree_tick = &fast_.front();
        for (const FastTick& tick : fast_)
            if (tick.t <= rollup_t_) tree_tick = &tick;
    }
    if (!fast_.empty())
        for (const FastSample& s : fast_.back().rows)
            fold(s, FigureSource::fast, true, false);
    if (tree_tick)
        for (const FastSample& s : tree_tick->rows)
            fold(s, FigureSource::fast, false, true);
    for (const RollupSample& s : rollup_)
        fold(s, FigureSource::rollup, true, true);
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
        // As the report's COUNTED column: the recorder is a process of the step.
        set.add(Family::scheduler_counted, labels,
                bytes(v.recorder_in_figure
                          ? v.current
                          : plus(v.current, recorder_share(v.key, recorder_, false))));
        set.add(Family::scheduler_counted_peak, labels,
                bytes(v.recorder_in_figure ? v.peak
                                           : plus(v.peak, recorder_share(v.key, recorder_, true))));
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
