// SPDX-License-Identifier: MIT
// Findings about growth: file pages kept by persistent workers (scenario 4), growth that resets
// with each worker generation (5), copy-on-read of main's heap (7), and an anonymous leak (11).
// docs/findings.md.
#include "diagnosis_parts.hpp"
#include "findings_thresholds.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

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

// One process held the slot through every epoch, its figure never shrank between two epoch ends
// by more than the noise, and it grew by more than the noise per epoch on the whole. Not "above
// the noise at every step": growth over a file saturates as the workers' mappings near the whole
// file, and a last step at the threshold's edge flipped the finding between identical runs.
bool grows_across_epochs(const GrowthFigure& f, int generations) {
    const auto s = steps(f);
    if (generations != 1 || s.empty() || s.size() + 1 != f.at_epoch_end.size()) return false;
    const std::int64_t first = *f.at_epoch_end.front();
    const auto noise = std::max<std::int64_t>(
        thresholds::growth_noise_kb,
        static_cast<std::int64_t>(thresholds::growth_noise_share * static_cast<double>(first)));
    std::int64_t total = 0;
    for (const std::int64_t step : s) {
        if (step < -noise) return false;
        total = saturating_add(total, step);
    }
    return total > saturating_mul(noise, static_cast<std::int64_t>(s.size()));
}

// "16.9 MiB -> 17.0 MiB (read 4.6 s before the epoch's end)": a value older than a second at its
// epoch's end says so.
std::string epoch_values(const GrowthFigure& f) {
    std::string out;
    for (std::size_t i = 0; i < f.at_epoch_end.size(); ++i) {
        const Kib& v = f.at_epoch_end[i];
        out += (out.empty() ? "" : " -> ") + (v ? size_text(*v) : std::string("n/a"));
        if (v && i < f.age_ms.size() && f.age_ms[i] >= 1000)
            out += fmt::format(" (read {:.1f} s before the epoch's end)", f.age_ms[i] / 1000.0);
    }
    return out;
}

std::int64_t trend_growth(const GrowthFigure& f) {
    return f.trend_first && f.trend_last ? saturating_sub(*f.trend_last, *f.trend_first) : 0;
}

// A figure's growth per epoch (with epochs) or over the run after start-up (without).
std::optional<std::int64_t> growth_of(const GrowthFigure& f, bool with_epochs) {
    if (with_epochs) return f.growth_per_epoch_kb();
    if (!f.trend_first || !f.trend_last) return std::nullopt;
    return trend_growth(f);
}

// When Σ RSS (SLURM's jobacct_gather/linux) reaches the limit if each growing worker keeps adding
// `per_worker_kb` a step (an epoch, or the run's length again), until every one maps the whole
// file (the ceiling).
std::string projection(const Context& c, std::int64_t per_worker_kb, int workers,
                       std::int64_t headroom_kb, bool with_epochs) {
    const SchedulerView* view = c.diagnosis.view("slurm_linux");
    if (!view || !view->margin_kb || !view->limit.kb || per_worker_kb <= 0 || workers <= 0)
        return {};
    const std::string limit = size_text(*view->limit.kb);
    if (*view->margin_kb < 0)
        return fmt::format("Σ RSS is over the {} limit ({}) already", limit, view->limit.source);
    const std::int64_t step = saturating_mul(per_worker_kb, workers);
    if (headroom_kb < *view->margin_kb)
        return fmt::format("at most {} more when every worker maps the whole file: Σ RSS stays "
                           "under the {} limit ({}) by {}",
                           size_text(headroom_kb), limit, view->limit.source,
                           size_text(saturating_sub(*view->margin_kb, headroom_kb)));
    const std::int64_t steps = (*view->margin_kb + step - 1) / step;
    if (!with_epochs)
        return fmt::format("at this rate Σ RSS reaches the {} limit ({}) after {} more run(s) "
                           "as long as this one",
                           limit, view->limit.source, steps);
    const int last = c.diagnosis.epochs.back().number;
    return fmt::format("at this rate Σ RSS reaches the {} limit ({}) in epoch {}: SLURM's "
                       "jobacct_gather/linux with OverMemoryKill kills the step then",
                       limit, view->limit.source, saturating_add(last, steps));
}

void persistent_file_growth(const Context& c, std::vector<Finding>& out) {
    const bool with_epochs = !c.diagnosis.epochs.empty();
    // Per file: the persistent worker slots whose RSS of it grew every epoch (or over the run)
    // in one process.
    std::map<std::string, std::vector<const SlotGrowth*>> by_file;
    for (const SlotGrowth& g : c.diagnosis.growth) {
        if (g.slot < 0) continue;
        for (const GrowthFigure& f : g.figures) {
            if (f.figure != "file") continue;
            if (with_epochs ? grows_across_epochs(f, g.generations)
                            : g.generations == 1 && trend_growth(f) >= thresholds::trend_growth_kb)
                by_file[f.path].push_back(&g);
        }
    }
    for (const auto& [path, slots] : by_file) {
        std::int64_t file_growth = 0, pss_growth = 0, held = 0;
        int with_pss = 0;
        for (const SlotGrowth* g : slots) {
            const GrowthFigure* f = g->find("file", path);
            file_growth = saturating_add(file_growth, growth_of(*f, with_epochs).value_or(0));
            const Kib last = with_epochs ? f->at_epoch_end.back() : f->trend_last;
            held = saturating_add(held, last.value_or(0));
            if (const GrowthFigure* pss = g->find("pss"))
                if (const auto grew = growth_of(*pss, with_epochs)) {
                    pss_growth = saturating_add(pss_growth, *grew);
                    ++with_pss;
                }
        }
        const auto workers = static_cast<std::int64_t>(slots.size());
        const std::int64_t mean = file_growth / workers;
        const std::string per = with_epochs ? "per epoch" : "over the run";
        Finding x;
        x.kind = "file_growth_persistent_workers";
        x.severity = Severity::warning;
        x.title = fmt::format("not a leak: {} persistent worker(s) keep adding mapped pages of {} "
                              "(+{} per worker {}); file-backed and reclaimable, but every "
                              "RSS-based scheduler counts them",
                              workers, path, size_text(mean), per);
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
        if (with_pss > 0)
            x.evidence.push_back(fmt::format(
                "their PSS grew {} per worker {} against +{} of RSS: the pages are shared page "
                "cache, counted once by PSS{}",
                size_text(pss_growth / with_pss), per, size_text(mean),
                pss_growth / with_pss * 4 < mean ? " (flat)" : ""));
        if (const GrowthFigure* dirty = slots.front()->find("private_dirty"); dirty && with_epochs)
            x.evidence.push_back(fmt::format("{}'s Private_Dirty at each epoch's end: {} (not "
                                             "anonymous growth)",
                                             slots.front()->label, epoch_values(*dirty)));
        if (const auto size = c.rows.file_size_bytes(path)) {
            const std::int64_t ceiling = saturating_mul(*size / 1024, workers);
            const std::int64_t headroom = std::max<std::int64_t>(0, saturating_sub(ceiling, held));
            x.evidence.push_back(fmt::format(
                "the file is {}: with every worker mapping all of it, these workers hold {} ({} "
                "more than now)",
                size_text(*size / 1024), size_text(ceiling), size_text(headroom)));
            if (auto when = projection(c, mean, static_cast<int>(workers), headroom, with_epochs);
                !when.empty())
                x.evidence.push_back(std::move(when));
        }
        x.advice = "close and reopen the environment or map at each epoch (or use "
                   "persistent_workers=False); for LMDB, readahead=False (MDB_NORDAHEAD) maps less "
                   "per read; a cgroup limit reclaims these pages, SLURM's Σ RSS does not "
                   "(JobAcctGatherParams=UsePss counts them once)";
        x.file = path;
        for (const ProcessInfo& p : c.data.processes)
            for (const SlotGrowth* g : slots)
                if (p.role == Role::worker && p.slot == g->slot) x.process_ids.push_back(p.id);
        if (with_epochs) {
            x.from_ms = c.diagnosis.epochs.front().start_ms;
            x.to_ms = c.diagnosis.epochs.back().end_ms;
        }
        // What it accounts for: the file pages these workers hold at the end.
        x.explains_kb = held;
        x.figure_name = with_epochs ? "growth_per_epoch_kb" : "growth_kb";
        x.figure = static_cast<double>(mean);
        x.figure_unit = with_epochs ? "KiB/epoch" : "KiB";
        out.push_back(std::move(x));
    }
}

// A process's RSS of the data files: its last reading of each in [from_ms, to_ms] that still held
// pages of it (a worker's last reading often falls in its exit, the file already unmapped: 2 of
// 12 torch runs under load), or its first reading.
std::optional<std::int64_t> data_file_rss(const Context& c, const std::set<std::string>& files,
                                          std::int64_t process_id, std::int64_t from_ms,
                                          std::int64_t to_ms, bool last) {
    std::optional<std::int64_t> sum;
    for (const std::string& path : c.rows.files_of(process_id)) {
        if (!files.contains(path)) continue;
        const FigurePoints& points = c.rows.file_points(process_id, path, FileFigure::rss);
        std::optional<FigurePoint> point;
        if (last) // what it held before it let go: a reading during its exit sees nothing mapped
            for (auto it = points.rbegin(); it != points.rend() && !point; ++it)
                if (it->t_ms >= from_ms && it->t_ms <= to_ms && it->kb > 0) point = *it;
        if (!last) point = FigureModel::first_in(points, from_ms, to_ms);
        if (point) sum = saturating_add(sum.value_or(0), point->kb);
    }
    return sum;
}

void generation_reset(const Context& c, std::vector<Finding>& out) {
    // Consecutive generations of a slot, the earlier one ending with at least the noise of the
    // data files. A re-forked worker starts without any of a file mapping's pages (fork copies no
    // page tables of a mapping without anonymous pages), so the drop is what the earlier one
    // ended with. The later one's first reading, whenever the tiers got to it, is evidence only:
    // under load a short-lived last generation exits before the maps tier reaches it, and
    // requiring that reading made the finding come and go between identical runs. Libraries and
    // the interpreter are mapped by every generation alike.
    const std::set<std::string> files = data_files(c.data);
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
            const auto end = data_file_rss(c, files, before.id, before.birth_ms,
                                           before.exit_ms.value_or(INT64_MAX), true);
            const auto start = data_file_rss(c, files, after.id, after.birth_ms,
                                             after.exit_ms.value_or(INT64_MAX), false);
            if (!end || *end < thresholds::growth_noise_kb) continue;
            drops = saturating_add(drops, *end);
            ++count;
            ids.push_back(after.id);
            if (evidence.size() < 4)
                evidence.push_back(fmt::format(
                    "worker {}: generation {} ended with {} of the data files mapped; generation "
                    "{} started without them ({})",
                    slot, before.generation, size_text(*end), after.generation,
                    start ? size_text(*start) + " at its first reading"
                          : std::string("not read before it exited")));
        }
    }
    if (count == 0) return;
    Finding x;
    x.kind = "per_generation_reset";
    x.severity = Severity::info;
    x.title = fmt::format("workers are re-forked each epoch: each generation starts without the "
                          "data files' pages mapped (the last one held {} on average); the page "
                          "cache stays",
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
        // The RssAnon it was born with (its first fast sample) and what it holds privately
        // beyond its own growth: the copy, whenever it happened.
        std::int64_t inherited = 0, copied = 0;
    };
    std::vector<Growth> copying;
    for (const ProcessInfo& p : c.data.processes) {
        if (p.role != Role::worker) continue;
        const std::int64_t to = p.exit_ms.value_or(INT64_MAX);
        const auto d0 = first_value(c.data, c.rows, p.id, Figure::private_dirty, p.birth_ms, to);
        const auto d1 = last_value(c.data, c.rows, p.id, Figure::private_dirty, p.birth_ms, to);
        if (!d0 || !d1) continue;
        const auto born = first_value(c.data, c.rows, p.id, Figure::rss_anon, p.birth_ms, to);
        const auto r0 = last_value(c.data, c.rows, p.id, Figure::rss, p.birth_ms, d0->t_ms);
        const auto r1 = last_value(c.data, c.rows, p.id, Figure::rss, p.birth_ms, d1->t_ms);
        const auto a0 = last_value(c.data, c.rows, p.id, Figure::rss_anon, p.birth_ms, d0->t_ms);
        const auto a1 = last_value(c.data, c.rows, p.id, Figure::rss_anon, p.birth_ms, d1->t_ms);
        if (!r0 || !r1 || !a0 || !a1 || !born) continue;
        Growth g{&p,
                 saturating_sub(d1->kb, d0->kb),
                 saturating_sub(r1->kb, r0->kb),
                 saturating_sub(a1->kb, a0->kb),
                 d0->kb,
                 d1->kb,
                 born->kb,
                 0};
        // Its own anonymous growth since birth is not a copy of main's pages.
        g.copied =
            saturating_sub(d1->kb, std::max<std::int64_t>(0, saturating_sub(a1->kb, born->kb)));
        const bool copied_since_first_sample =
            d1->t_ms > d0->t_ms && g.dirty >= thresholds::cow_min_kb &&
            static_cast<double>(g.anon) <
                thresholds::cow_max_rss_share * static_cast<double>(g.dirty);
        const bool copied_since_birth =
            g.copied >= thresholds::cow_birth_min_kb &&
            static_cast<double>(g.copied) >=
                thresholds::cow_birth_inherited_share * static_cast<double>(g.inherited);
        if (copied_since_first_sample || copied_since_birth) copying.push_back(g);
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
        x.title = fmt::format(
            "copy-on-write: {} workers privately copied main's memory (Private_Dirty {} per "
            "worker, {}, while RSS stays flat)",
            copying.size(), size_text(held),
            mean >= thresholds::cow_min_kb
                ? "+" + size_text(mean) + " since their first PSS reading"
                : std::string("most of it before their first PSS reading"));
        for (const Growth& g : copying) {
            if (x.evidence.size() < 4)
                x.evidence.push_back(fmt::format(
                    "{} pid {}: born with RssAnon {}; Private_Dirty {} -> {}, of which {} is "
                    "not its own growth; RssAnon {:+} KiB, RSS {:+} KiB since its first PSS "
                    "reading",
                    process_label(*g.p), g.p->key.pid, size_text(g.inherited),
                    size_text(g.first_dirty), size_text(g.last_dirty),
                    size_text(std::max<std::int64_t>(0, g.copied)), g.anon, g.rss));
            x.process_ids.push_back(g.p->id);
        }
        x.evidence.push_back("the pages were already in each worker's RSS (inherited at fork); "
                             "writing to them (Python reference counts) makes private copies: RSS "
                             "cannot see it, Σ PSS and USS grow");
        x.advice = "keep per-sample data in numpy arrays, bytes or Arrow buffers instead of Python "
                   "lists and dicts of objects (each access writes a reference count); and call "
                   "gc.freeze() in main before the DataLoader starts its workers (a full garbage "
                   "collection in a worker writes to every object main made: 24 MiB copied per "
                   "worker of a torch process, docs/findings.md)";
        x.explains_kb = saturating_mul(held, static_cast<std::int64_t>(copying.size()));
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
