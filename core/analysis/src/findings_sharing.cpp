// SPDX-License-Identifier: MIT
// Findings about pages that RSS counts once per process: a mapped file's page cache (scenarios 1
// and 2), anonymous memory inherited from main at fork, readahead that maps more than is read
// (scenario 3), and an LMDB environment opened before fork (scenario 6). docs/findings.md.
#include "diagnosis_parts.hpp"
#include "findings_thresholds.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace loaderlens::diagnosis {

namespace {

// What the scheduler views say, in one line.
std::string scheduler_line(const Diagnosis& d) {
    std::string line = "peaks as each would count the tree:";
    for (const char* key : {"slurm_linux", "slurm_usepss", "slurm_cgroup", "k8s_working_set"})
        if (const SchedulerView* v = d.view(key); v && v->peak)
            line += fmt::format(" {} {};", v->name, size_text(*v->peak));
    line.pop_back();
    return line;
}

struct FileTick {
    std::int64_t t_ms = 0, rss = 0, pss = 0;
    std::vector<std::int64_t> processes;
    std::optional<std::int64_t> size_bytes;
};

// Per mapped file, the tick of one source (smaps at a maps tick, or pagemap at a residency tick,
// the PSS computed among the tree's sharers) where Σ RSS - Σ PSS was widest: the figure model's
// complete per-tick sums; the size as last seen (a file that grew is re-read).
std::map<std::string, FileTick> widest_file_ticks(const Context& c) {
    std::map<std::string, FileTick> best;
    for (const std::string& path : c.rows.files())
        for (const FigureModel::FileTick& tick : c.rows.file_ticks(path)) {
            if (!tick.pss_kb) continue;
            const std::int64_t gap = saturating_sub(tick.rss_kb, *tick.pss_kb);
            auto it = best.find(path);
            if (it == best.end() || gap > saturating_sub(it->second.rss, it->second.pss))
                best[path] = FileTick{tick.t_ms, tick.rss_kb, *tick.pss_kb, tick.process_ids,
                                      c.rows.file_size_bytes(path)};
        }
    return best;
}

// The severity of an RSS over-count (shared file pages, memory shared since fork): it matters
// where the job is held to Σ RSS near a limit. A categorical fact of the run, not a share of a
// figure that moves between identical runs (the file's share of Σ RSS flipped a finding between
// warning and info run to run).
Severity overcount_severity(const Diagnosis& d) {
    // A site known to judge by another figure (Σ PSS, the cgroup) is not held to the over-count.
    if (d.site.known() && d.site.view != "slurm_linux") return Severity::info;
    const SchedulerView* v = d.view("slurm_linux");
    if (!v || !v->judged_margin_kb() || !v->limit.kb || *v->limit.kb <= 0) return Severity::info;
    const double used = static_cast<double>(saturating_sub(*v->limit.kb, *v->judged_margin_kb())) /
                        static_cast<double>(*v->limit.kb);
    return used >= thresholds::limit_near_share ? Severity::warning : Severity::info;
}

// The paths of code: files some process mapped executable (programs, the interpreter,
// libraries), or named like a library where the recording does not say (ObjectInfo::is_code).
std::set<std::string> code_paths(const RecordingData& data) {
    std::set<std::string> paths;
    for (const ObjectInfo& o : data.objects)
        if (o.is_code()) paths.insert(o.path);
    return paths;
}

void shared_file_cache(const Context& c, std::vector<Finding>& out) {
    const std::set<std::string> code = code_paths(c.data);
    for (const auto& [path, f] : widest_file_ticks(c)) {
        const std::int64_t gap = saturating_sub(f.rss, f.pss);
        if (f.processes.size() < 2 || f.pss <= 0 || gap < thresholds::shared_file_min_gap_kb ||
            static_cast<double>(f.rss) < thresholds::shared_file_ratio * static_cast<double>(f.pss))
            continue;
        // Code is shared by every process the same way, but it is never the story: a Python run
        // made this finding about python3.11 every time.
        if (code.contains(path) || is_shared_library(path)) continue;
        const double ratio = static_cast<double>(f.rss) / static_cast<double>(f.pss);
        Finding x;
        x.kind = "shared_file_cache";
        x.severity = overcount_severity(c.diagnosis);
        x.title = fmt::format("the page cache of {} is counted once per process by RSS (its Σ RSS "
                              "is {:.1f}x its Σ PSS): shared file pages, not a leak",
                              path, ratio);
        x.evidence.push_back(fmt::format(
            "at {:.1f} s, {} processes mapped it: Σ RSS {}, Σ PSS {}{}", f.t_ms / 1000.0,
            f.processes.size(), size_text(f.rss), size_text(f.pss),
            f.size_bytes ? fmt::format(" (the file is {})", size_text(*f.size_bytes / 1024))
                         : std::string()));
        x.evidence.push_back(fmt::format(
            "these are file pages (RssFile), shared and reclaimable: Σ RSS overstates what they "
            "use by {} ({:.1f}x)",
            size_text(gap), ratio));
        for (const FileResidencySummary& r : c.report.residency)
            if (r.file.path == path && r.headline && r.headline->cache_amplification &&
                *r.headline->cache_amplification >= 1.5)
                x.evidence.push_back(fmt::format(
                    "the page cache ran ahead of the reads: with {:.0f}% of the file read, it had "
                    "gained {:.1f}x the bytes read (readahead)",
                    100 * r.headline->read_fraction, *r.headline->cache_amplification));
        x.evidence.push_back(scheduler_line(c.diagnosis));
        x.advice = "nothing to fix in the loader. Where the job is held to Σ RSS (SLURM "
                   "jobacct_gather/linux), set JobAcctGatherParams=UsePss or use "
                   "jobacct_gather/cgroup, or size --mem for Σ PSS plus a margin; fewer workers "
                   "lower Σ RSS, not the memory used";
        x.process_ids = f.processes;
        x.file = path;
        x.from_ms = x.to_ms = f.t_ms;
        x.explains_kb = gap;
        x.figure_name = "rss_over_pss";
        x.figure = ratio;
        x.figure_unit = "x";
        out.push_back(std::move(x));
    }
}

void inherited_anon(const Context& c, std::vector<Finding>& out) {
    if (!c.diagnosis.gap_total_kb) return; // no rollup tick with both figures
    const std::int64_t tick = c.diagnosis.gap_ms;
    const CauseGaps& gaps = c.gaps;
    std::int64_t workers_gap = 0, main_id = 0;
    std::vector<std::int64_t> workers;
    for (const auto& [id, gap] : gaps.anon_by_process) {
        const ProcessInfo* p = find_process(c.report.processes, id);
        if (!p) continue;
        if (p->role == Role::main) main_id = id;
        if (p->role != Role::worker) continue;
        workers_gap = saturating_add(workers_gap, gap);
        if (gap >= 1024) workers.push_back(id);
    }
    if (workers_gap < thresholds::inherited_anon_min_kb || workers.empty() || main_id == 0) return;
    const auto main_anon =
        last_value(c.data, c.rows, main_id, Figure::rss_anon, saturating_sub(tick, 2000), tick);
    Finding x;
    x.kind = "inherited_anon";
    const auto n = static_cast<std::int64_t>(workers.size());
    // Each worker's RssAnon - Pss_Anon is not what it shares: a page main and N workers share is
    // 1 - 1/(N+1) of a page in that difference (17% below with 5 workers). Σ RSS counts a shared
    // page N+1 times, PSS once: the over-count over the tree is N x what is shared, and the
    // over-count divided by N is the memory each worker shares with main.
    const std::int64_t shared = gaps.anon / n;
    const std::int64_t mean_gap = workers_gap / n;
    x.severity = overcount_severity(c.diagnosis);
    x.title = fmt::format("{} of anonymous memory built in main before fork is shared "
                          "copy-on-write with each of {} workers: RSS counts it in each, so Σ RSS "
                          "over-counts it by {}; not page cache",
                          size_text(shared), workers.size(), size_text(gaps.anon));
    x.evidence.push_back(fmt::format(
        "at {:.1f} s: Σ over the tree of RssAnon - Pss_Anon is {} = {} workers x {} shared with "
        "main; each worker's own RssAnon - Pss_Anon is {} on average (PSS gives each sharer its "
        "part of a shared page); main holds {} of anonymous memory",
        tick / 1000.0, size_text(gaps.anon), workers.size(), size_text(shared), size_text(mean_gap),
        main_anon ? size_text(main_anon->kb) : std::string("an unknown amount")));
    x.evidence.push_back(fmt::format(
        "copy-on-write pages shared since fork: not page cache, not reclaimable; Σ PSS counts them "
        "once, RSS once per process (of the RSS-PSS gap, {} is anonymous, {} file, {} shmem)",
        size_text(gaps.anon), size_text(gaps.file), size_text(gaps.shmem)));
    x.advice = "load the data with np.load(mmap_mode='r') or in each worker (worker_init_fn), or "
               "build it after the workers start; a cgroup counts it once, SLURM's default "
               "accounting once per worker";
    x.process_ids = workers;
    x.process_ids.push_back(main_id);
    x.from_ms = x.to_ms = tick;
    x.explains_kb = gaps.anon;
    x.figure_name = "rss_overcount_kb";
    x.figure = static_cast<double>(gaps.anon);
    x.figure_unit = "KiB";
    out.push_back(std::move(x));
}

// At the end of the run: the page cache the loader's dataset gained against the distinct bytes the
// loader read (a sequential pass ends near 1x, whatever ran ahead on the way).
void readahead_amplification(const Context& c, std::vector<Finding>& out) {
    if (c.data.loader.progress.empty()) return;
    const std::int64_t read = c.data.loader.progress.back().distinct_bytes;
    for (const FileResidencySummary& r : c.report.residency) {
        if (!r.loader_data_file || !r.final_cached || r.file.size_bytes <= 0 || read <= 0) continue;
        const std::int64_t gained_bytes = saturating_mul(
            saturating_sub(*r.final_cached, r.cached_before.value_or(0)), r.file.page_size);
        const double read_share =
            static_cast<double>(read) / static_cast<double>(r.file.size_bytes);
        const double amplification = static_cast<double>(gained_bytes) / static_cast<double>(read);
        if (read_share >= thresholds::readahead_max_read_share ||
            amplification < thresholds::readahead_amplification)
            continue;
        Finding x;
        x.kind = "readahead_amplification";
        x.severity = Severity::warning;
        x.title =
            fmt::format("readahead amplification {:.1f}x: the page cache of {} gained {:.1f}x "
                        "the bytes the loader read",
                        amplification, r.file.path, amplification);
        x.evidence.push_back(fmt::format(
            "by the end: {} distinct bytes read ({:.1f}% of the file), page cache gained {} "
            "({:.1f}% of the file cached at the end, {:.1f}% before)",
            size_text(read / 1024), 100 * read_share, size_text(gained_bytes / 1024),
            100.0 * *r.final_cached * r.file.page_size / r.file.size_bytes,
            100.0 * r.cached_before.value_or(0) * r.file.page_size / r.file.size_bytes));
        if (r.headline && r.headline->worker_mapped_amplification)
            x.evidence.push_back(fmt::format(
                "at {:.1f} s each worker had {:.1f}x the bytes it read mapped (fault-around, large "
                "folios)",
                r.headline->t_ms / 1000.0, *r.headline->worker_mapped_amplification));
        x.advice = "random small reads: madvise(MADV_RANDOM) on the map (--advice random), "
                   "lmdb.open(readahead=False), or posix_fadvise(POSIX_FADV_RANDOM) for reads";
        x.file = r.file.path;
        x.from_ms = 0;
        x.to_ms = c.report.duration_ms;
        x.explains_kb = gained_bytes / 1024;
        x.figure_name = "cache_gained_over_read";
        x.figure = amplification;
        x.figure_unit = "x";
        out.push_back(std::move(x));
    }
}

void lmdb_before_fork(const Context& c, std::vector<Finding>& out) {
    // The loader says so; else a data.mdb that main maps and workers map too (a worker that opened
    // its own environment maps it, but main then does not).
    const bool from_config = loader_config(c.data).value("lmdb_open", "") == "parent";
    // Main must still map it once workers exist: a job that built its database in main and
    // closed it before starting the loader mapped it too, before any worker was born.
    std::optional<std::int64_t> first_worker_ms;
    for (const ProcessInfo& p : c.data.processes)
        if (p.role == Role::worker)
            first_worker_ms = std::min(first_worker_ms.value_or(p.birth_ms), p.birth_ms);
    std::map<std::int64_t, std::pair<bool, std::vector<std::int64_t>>> mdb; // main maps, workers
    std::map<std::int64_t, std::string> paths;
    for (const ObjectInfo& o : c.data.objects)
        if (o.path.ends_with("/data.mdb")) paths[o.id] = o.path;
    for (const MapRow& row : c.data.maps) {
        if (!paths.contains(row.object_id)) continue;
        const ProcessInfo* p = find_process(c.report.processes, row.process_id);
        if (!p) continue;
        auto& [by_main, workers] = mdb[row.object_id];
        if (p->role == Role::main && first_worker_ms && row.t_ms >= *first_worker_ms)
            by_main = true;
        if (p->role == Role::worker &&
            std::find(workers.begin(), workers.end(), p->id) == workers.end())
            workers.push_back(p->id);
    }
    for (const auto& [object, seen] : mdb) {
        const auto& [by_main, workers] = seen;
        if (!(from_config || by_main) || workers.empty()) continue;
        Finding x;
        x.kind = "lmdb_opened_before_fork";
        x.severity = Severity::warning;
        x.title = fmt::format("the LMDB environment {} was opened in main before the workers were "
                              "forked, and they use it",
                              paths[object]);
        x.evidence.push_back(from_config ? "the loader's configuration says lmdb_open=parent"
                                         : "main maps data.mdb and so do the workers: an "
                                           "environment inherited at fork (a worker that opens "
                                           "its own maps it while main does not)");
        x.evidence.push_back(fmt::format("{} workers map it", workers.size()));
        x.advice = "open the environment lazily in each worker (on first use in __getitem__, or in "
                   "worker_init_fn); an environment used across fork works only with lock=False "
                   "(MDB_NOLOCK), else readers fail with MDB_BAD_RSLOT";
        x.process_ids = workers;
        x.file = paths[object];
        x.figure_name = "workers";
        x.figure = static_cast<double>(workers.size());
        out.push_back(std::move(x));
    }
}

} // namespace

void sharing_findings(const Context& context, std::vector<Finding>& out) {
    shared_file_cache(context, out);
    inherited_anon(context, out);
    readahead_amplification(context, out);
    lmdb_before_fork(context, out);
}

} // namespace loaderlens::diagnosis
