// SPDX-License-Identifier: MIT
// Findings about growth: file pages kept by persistent workers (scenario 4), growth that resets
// with each worker generation (5), copy-on-read of main's heap (7), and an anonymous leak (11).
// docs/findings.md.
#include "diagnosis_parts.hpp"
#include "findings_thresholds.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace loaderlens::diagnosis {

namespace {

// Growth steps between epoch ends (empty where a value is missing).
std::vector<std::int64_t> steps(const GrowthFigure& f) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 1; i < f.at_epoch_end.size(); ++i)
        if (f.at_epoch_end[i] && f.at_epoch_end[i - 1])
            out.push_back(saturating_sub(*f.at_epoch_end[i], *f.at_epoch_end[i - 1]));
    return out;
}

bool grows_every_epoch(const GrowthFigure& f, int generations) {
    const auto s = steps(f);
    if (generations != 1 || s.empty() || s.size() + 1 != f.at_epoch_end.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto noise = std::max<std::int64_t>(
            thresholds::growth_noise_kb,
            static_cast<std::int64_t>(thresholds::growth_noise_share * *f.at_epoch_end[i]));
        if (s[i] <= noise) return false;
    }
    return true;
}

std::string epoch_values(const GrowthFigure& f) {
    std::string out;
    for (const Kib& v : f.at_epoch_end)
        out += (out.empty() ? "" : " -> ") + (v ? size_text(*v) : std::string("n/a"));
    return out;
}

std::int64_t trend_growth(const GrowthFigure& f) {
    return f.trend_first && f.trend_last ? saturating_sub(*f.trend_last, *f.trend_first) : 0;
}

void persistent_file_growth(const Context& c, std::vector<Finding>& out) {
    // Per file: the worker slots whose RSS of it grew every epoch in one process.
    std::map<std::string, std::vector<const SlotGrowth*>> by_file;
    std::map<std::string, std::vector<std::int64_t>> growth_by_file;
    for (const SlotGrowth& g : c.diagnosis.growth) {
        if (g.slot < 0) continue;
        for (const GrowthFigure& f : g.figures) {
            if (f.figure != "file") continue;
            if (!c.diagnosis.epochs.empty() && grows_every_epoch(f, g.generations)) {
                by_file[f.path].push_back(&g);
                growth_by_file[f.path].push_back(*f.growth_per_epoch_kb());
            } else if (c.diagnosis.epochs.empty() && g.generations == 1 &&
                       trend_growth(f) >= thresholds::trend_growth_kb) {
                by_file[f.path].push_back(&g);
                growth_by_file[f.path].push_back(trend_growth(f));
            }
        }
    }
    for (const auto& [path, slots] : by_file) {
        // File-backed, not anonymous: the slot's Private_Dirty did not grow alike.
        const auto& growth = growth_by_file[path];
        std::int64_t mean = 0;
        for (auto g : growth)
            mean = saturating_add(mean, g);
        mean /= static_cast<std::int64_t>(growth.size());
        const bool with_epochs = !c.diagnosis.epochs.empty();
        Finding x;
        x.kind = "file_growth_persistent_workers";
        x.severity = Severity::warning;
        x.title = fmt::format("growth {} in persistent workers is file-backed: mapped pages of {} "
                              "they keep ({} per worker{}); reclaimable, but RSS-based "
                              "schedulers count it",
                              with_epochs ? "across epochs" : "over time", path, size_text(mean),
                              with_epochs ? " per epoch" : " over the run");
        for (const SlotGrowth* g : slots) {
            const GrowthFigure* f = g->find("file", path);
            x.evidence.push_back(
                with_epochs
                    ? fmt::format("{}: RSS of the file at each epoch's end {}", g->label,
                                  epoch_values(*f))
                    : fmt::format("{}: RSS of the file {} at {:.1f} s -> {} at {:.1f} s", g->label,
                                  size_text(*f->trend_first), *f->trend_from_ms / 1000.0,
                                  size_text(*f->trend_last), *f->trend_to_ms / 1000.0));
            if (x.slot < 0) x.slot = g->slot;
        }
        if (const GrowthFigure* dirty = slots.front()->find("private_dirty"); dirty && with_epochs)
            x.evidence.push_back(fmt::format("{}'s Private_Dirty at each epoch's end: {} (not "
                                             "anonymous growth)",
                                             slots.front()->label, epoch_values(*dirty)));
        x.advice = "close and reopen the environment or map at each epoch (or use "
                   "persistent_workers=False); for LMDB, readahead=False (MDB_NORDAHEAD) maps less "
                   "per read; a cgroup limit reclaims these pages, SLURM's Σ RSS does not";
        x.file = path;
        for (const ProcessInfo& p : c.data.processes)
            for (const SlotGrowth* g : slots)
                if (p.role == Role::worker && p.slot == g->slot) x.process_ids.push_back(p.id);
        if (with_epochs) {
            x.from_ms = c.diagnosis.epochs.front().start_ms;
            x.to_ms = c.diagnosis.epochs.back().end_ms;
        }
        x.explains_kb = saturating_mul(mean, static_cast<std::int64_t>(slots.size()));
        x.figure_name = with_epochs ? "growth_per_epoch_kb" : "growth_kb";
        x.figure = static_cast<double>(mean);
        x.figure_unit = with_epochs ? "KiB/epoch" : "KiB";
        out.push_back(std::move(x));
    }
}

void generation_reset(const Context& c, std::vector<Finding>& out) {
    // Consecutive generations of a slot: the previous one's last RssFile against the next one's
    // first.
    std::map<int, std::vector<const ProcessInfo*>> slots;
    for (const ProcessInfo& p : c.data.processes)
        if (p.role == Role::worker && p.slot >= 0) slots[p.slot].push_back(&p);
    std::vector<std::string> evidence;
    std::vector<std::int64_t> ids;
    std::int64_t drops = 0, count = 0;
    for (auto& [slot, list] : slots) {
        std::sort(list.begin(), list.end(),
                  [](auto* a, auto* b) { return a->birth_ms < b->birth_ms; });
        for (std::size_t i = 1; i < list.size(); ++i) {
            const ProcessInfo& before = *list[i - 1];
            const ProcessInfo& after = *list[i];
            const auto end = last_value(c.data, c.rows, before.id, Figure::rss_file,
                                        before.birth_ms, before.exit_ms.value_or(INT64_MAX));
            const auto start =
                first_value(c.data, c.rows, after.id, Figure::rss_file, after.birth_ms, INT64_MAX);
            if (!end || !start ||
                end->kb < saturating_add(saturating_mul(2, start->kb), thresholds::growth_noise_kb))
                continue;
            drops = saturating_add(drops, saturating_sub(end->kb, start->kb));
            ++count;
            ids.push_back(after.id);
            if (evidence.size() < 4)
                evidence.push_back(fmt::format(
                    "worker {}: generation {} ended with {} of file pages, generation {} started "
                    "with {}",
                    slot, before.generation, size_text(end->kb), after.generation,
                    size_text(start->kb)));
        }
    }
    if (count == 0) return;
    Finding x;
    x.kind = "per_generation_reset";
    x.severity = Severity::info;
    x.title = fmt::format("workers are re-forked each epoch: each generation starts with little of "
                          "the files mapped (a mean drop of {}); the page cache stays",
                          size_text(drops / count));
    x.evidence = std::move(evidence);
    x.evidence.push_back("the page cache is system-wide: it outlives the workers and is charged to "
                         "the cgroup that first read it");
    x.advice = "nothing to fix; growth within an epoch is the pages each worker touched";
    x.process_ids = ids;
    x.figure_name = "mean_drop_kb";
    x.figure = static_cast<double>(drops / count);
    x.figure_unit = "KiB";
    out.push_back(std::move(x));
}

// Per worker: Private_Dirty and RSS from its first rollup sample to its last.
void anon_growth(const Context& c, std::vector<Finding>& out) {
    struct Growth {
        const ProcessInfo* p;
        std::int64_t dirty = 0, rss = 0, anon = 0, first_dirty = 0, last_dirty = 0;
    };
    std::vector<Growth> copying;
    for (const ProcessInfo& p : c.data.processes) {
        if (p.role != Role::worker) continue;
        const std::int64_t to = p.exit_ms.value_or(INT64_MAX);
        const auto d0 = first_value(c.data, c.rows, p.id, Figure::private_dirty, p.birth_ms, to);
        const auto d1 = last_value(c.data, c.rows, p.id, Figure::private_dirty, p.birth_ms, to);
        if (!d0 || !d1 || d1->t_ms <= d0->t_ms) continue;
        const auto r0 = last_value(c.data, c.rows, p.id, Figure::rss, p.birth_ms, d0->t_ms);
        const auto r1 = last_value(c.data, c.rows, p.id, Figure::rss, p.birth_ms, d1->t_ms);
        const auto a0 = last_value(c.data, c.rows, p.id, Figure::rss_anon, p.birth_ms, d0->t_ms);
        const auto a1 = last_value(c.data, c.rows, p.id, Figure::rss_anon, p.birth_ms, d1->t_ms);
        if (!r0 || !r1 || !a0 || !a1) continue;
        Growth g{&p,
                 saturating_sub(d1->kb, d0->kb),
                 saturating_sub(r1->kb, r0->kb),
                 saturating_sub(a1->kb, a0->kb),
                 d0->kb,
                 d1->kb};
        if (g.dirty >= thresholds::cow_min_kb &&
            static_cast<double>(g.anon) <
                thresholds::cow_max_rss_share * static_cast<double>(g.dirty))
            copying.push_back(g);
    }
    if (!copying.empty()) {
        std::int64_t sum = 0;
        for (const Growth& g : copying)
            sum = saturating_add(sum, g.dirty);
        const std::int64_t mean = sum / static_cast<std::int64_t>(copying.size());
        // The key figure is what each holds privately at the end: the growth starts at the first
        // sample, by which a worker may have copied much already (measured: 55.6 of 64 MiB).
        std::int64_t held = 0;
        for (const Growth& g : copying)
            held = saturating_add(held, g.last_dirty);
        held /= static_cast<std::int64_t>(copying.size());
        Finding x;
        x.kind = "copy_on_read";
        x.severity = Severity::warning;
        x.title = fmt::format("copy-on-write: {} workers are privately copying main's memory "
                              "(Private_Dirty {} per worker, +{} since their first sample, while "
                              "RSS stays flat)",
                              copying.size(), size_text(held), size_text(mean));
        for (const Growth& g : copying) {
            if (x.evidence.size() < 4)
                x.evidence.push_back(
                    fmt::format("{} pid {}: Private_Dirty {} -> {}, RssAnon {:+} KiB, RSS {:+} KiB",
                                process_label(*g.p), g.p->key.pid, size_text(g.first_dirty),
                                size_text(g.last_dirty), g.anon, g.rss));
            x.process_ids.push_back(g.p->id);
        }
        x.evidence.push_back("the pages were already in each worker's RSS (inherited at fork); "
                             "writing to them (Python reference counts) makes private copies: RSS "
                             "cannot see it, Σ PSS and USS grow");
        x.advice = "keep per-sample data in numpy arrays, bytes or Arrow buffers instead of Python "
                   "lists and dicts of objects (each access writes a reference count)";
        x.explains_kb = sum;
        x.figure_name = "private_dirty_kb";
        x.figure = static_cast<double>(held);
        x.figure_unit = "KiB";
        out.push_back(std::move(x));
    }

    // A leak: Private_Dirty and RssAnon grow at every epoch end in one process.
    for (const SlotGrowth& g : c.diagnosis.growth) {
        const GrowthFigure* dirty = g.find("private_dirty");
        const GrowthFigure* anon = g.find("rss_anon");
        if (!dirty || !anon) continue;
        const bool by_epochs = dirty->monotone && anon->monotone;
        const bool by_trend = c.diagnosis.epochs.empty() &&
                              trend_growth(*dirty) >= thresholds::trend_growth_kb &&
                              static_cast<double>(trend_growth(*anon)) >=
                                  thresholds::cow_max_rss_share * trend_growth(*dirty);
        if (!by_epochs && !by_trend) continue;
        Finding x;
        x.kind = "anon_leak";
        x.severity = Severity::critical;
        const std::int64_t per = by_epochs ? *dirty->growth_per_epoch_kb() : trend_growth(*dirty);
        x.title = fmt::format("growth in {} is anonymous private memory: a leak, not page cache "
                              "(+{} {})",
                              g.label, size_text(per), by_epochs ? "per epoch" : "over the run");
        if (by_epochs) {
            x.evidence.push_back("Private_Dirty at each epoch's end: " + epoch_values(*dirty));
            x.evidence.push_back("RssAnon at each epoch's end: " + epoch_values(*anon));
        } else {
            x.evidence.push_back(
                fmt::format("Private_Dirty {} at {:.1f} s -> {} at {:.1f} s",
                            size_text(*dirty->trend_first), *dirty->trend_from_ms / 1000.0,
                            size_text(*dirty->trend_last), *dirty->trend_to_ms / 1000.0));
            x.evidence.push_back("epochs were not marked: judged over time, after the worker's "
                                 "first seconds");
        }
        x.advice = "find what the worker keeps between batches (caches, lists appended to, "
                   "tensors kept alive); a heap profiler (memray, tracemalloc) in that worker "
                   "names the allocation";
        x.slot = g.slot;
        for (const ProcessInfo& p : c.data.processes)
            if ((g.slot < 0 && p.role == Role::main) ||
                (g.slot >= 0 && p.role == Role::worker && p.slot == g.slot))
                x.process_ids.push_back(p.id);
        x.explains_kb =
            by_epochs ? saturating_mul(per, static_cast<std::int64_t>(dirty->at_epoch_end.size()))
                      : per;
        x.figure_name = by_epochs ? "private_dirty_growth_per_epoch_kb" : "private_dirty_growth_kb";
        x.figure = static_cast<double>(per);
        x.figure_unit = by_epochs ? "KiB/epoch" : "KiB";
        out.push_back(std::move(x));
    }
}

} // namespace

void growth_findings(const Context& context, std::vector<Finding>& out) {
    persistent_file_growth(context, out);
    generation_reset(context, out);
    anon_growth(context, out);
}

} // namespace loaderlens::diagnosis
