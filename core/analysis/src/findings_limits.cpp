// SPDX-License-Identifier: MIT
// Findings about memory held by main for the batches (shared-memory batches, scenario 8; pinned
// staging, 9) and a dataset the page cache cannot hold (10); the limit (12) is
// findings_site_limits.cpp. docs/findings.md.
#include "diagnosis_parts.hpp"
#include "findings_thresholds.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace loaderlens::diagnosis {

namespace {

struct MainPeak {
    std::int64_t process_id = 0, kb = 0, t_ms = 0;
};

// The highest value of a figure (fast or rollup tier) in a main process, with its tick: from
// each main's own rows.
std::optional<MainPeak> main_peak(const Context& c, Figure figure) {
    const bool fast = source_of(figure) == FigureSource::fast;
    std::optional<MainPeak> best;
    for (const ProcessInfo& p : c.data.processes) {
        if (p.role != Role::main) continue;
        const auto& index = fast ? c.rows.fast : c.rows.rollup;
        auto it = index.find(p.id);
        if (it == index.end()) continue;
        for (std::size_t row : it->second) {
            const Kib value = fast ? figure_of(c.data.fast[row].sample, figure)
                                   : figure_of(c.data.rollup[row].sample, figure);
            const std::int64_t t = fast ? c.data.fast[row].t_ms : c.data.rollup[row].t_ms;
            if (value && (!best || *value > best->kb)) best = MainPeak{p.id, *value, t};
        }
    }
    return best;
}

void batches_in_main(const Context& c, std::vector<Finding>& out) {
    const auto config = loader_config(c.data);
    const auto locked = main_peak(c, Figure::locked);
    const auto shmem = main_peak(c, Figure::rss_shmem);
    // Pinned staging is shared memory too: the loader says how much; else what is locked.
    const std::int64_t staging_bytes = config.value("pin_staging_bytes", std::int64_t{0});
    const std::int64_t locked_kb =
        staging_bytes > 0 ? staging_bytes / 1024 : (locked ? locked->kb : 0);
    if (shmem && saturating_sub(shmem->kb, locked_kb) >= thresholds::shmem_batches_min_kb) {
        const std::int64_t batches_kb = saturating_sub(shmem->kb, locked_kb);
        Finding x;
        x.kind = "shared_memory_batches";
        x.severity = Severity::info;
        x.title = fmt::format("shared-memory batches in flight: {} in main", size_text(batches_kb));
        const std::int64_t ring = config.value("batch_ring_bytes", std::int64_t{0});
        if (ring > 0)
            x.evidence.push_back(
                fmt::format("= workers x prefetch x batch: {} x {} x {} = {}",
                            config.value("workers", 0), config.value("prefetch", 0),
                            size_text(ring / 1024 / std::max(1, config.value("workers", 1)) /
                                      std::max(1, config.value("prefetch", 1))),
                            size_text(ring / 1024)));
        else
            x.evidence.push_back("PyTorch puts each collated batch in shared memory (/dev/shm): "
                                 "num_workers x prefetch_factor x batch bytes are in flight");
        x.evidence.push_back(
            fmt::format("main's RssShmem peaked at {} at {:.1f} s{}", size_text(shmem->kb),
                        shmem->t_ms / 1000.0,
                        locked_kb ? fmt::format(" ({} of it pinned staging)", size_text(locked_kb))
                                  : std::string()));
        x.advice = "counted by RSS in main and in the worker that filled each batch, by PSS once; "
                   "lower prefetch_factor or the batch size to shrink it";
        x.process_ids = {shmem->process_id};
        x.from_ms = x.to_ms = shmem->t_ms;
        x.explains_kb = batches_kb;
        x.figure_name = "main_shmem_kb";
        x.figure = static_cast<double>(batches_kb);
        x.figure_unit = "KiB";
        out.push_back(std::move(x));
    }
    if (locked && locked->kb >= thresholds::pinned_min_kb) {
        Finding x;
        x.kind = "pinned_staging";
        x.severity = Severity::info;
        x.title = fmt::format("pinned staging buffers hold {} in main (locked: never swapped or "
                              "reclaimed)",
                              size_text(locked->kb));
        x.evidence.push_back(fmt::format("main's Locked peaked at {} at {:.1f} s",
                                         size_text(locked->kb), locked->t_ms / 1000.0));
        const std::int64_t staging = config.value("pin_staging_bytes", std::int64_t{0});
        if (staging > 0)
            x.evidence.push_back(fmt::format("the loader's staging: {} (one block per batch in "
                                             "flight)",
                                             size_text(staging / 1024)));
        x.advice = "pin_memory=True keeps a page-locked copy of each batch in flight in main; it "
                   "grows with the caching allocator's blocks";
        x.process_ids = {locked->process_id};
        x.from_ms = x.to_ms = locked->t_ms;
        x.explains_kb = locked->kb;
        x.figure_name = "main_locked_kb";
        x.figure = static_cast<double>(locked->kb);
        x.figure_unit = "KiB";
        out.push_back(std::move(x));
    }
}

void thrashing(const Context& c, std::vector<Finding>& out) {
    for (const FileResidencySummary& r : c.report.residency) {
        // Only evictions seen during the run: pages evicted before it began (an earlier job,
        // memory pressure since the file was written) are re-read once, which is no thrashing.
        if (!r.evicted_during || r.file.size_bytes <= 0 || r.file.page_size <= 0) continue;
        const std::int64_t pages = r.file.size_bytes / r.file.page_size;
        const std::int64_t evicted = *r.evicted_during;
        if (pages <= 0 ||
            static_cast<double>(evicted) < thresholds::thrashing_evicted_share * pages)
            continue;
        Finding x;
        x.kind = "cache_thrashing";
        x.severity = Severity::warning;
        x.title = fmt::format("page cache thrashing: {} does not stay in memory; reads go to disk",
                              r.file.path);
        x.evidence.push_back(fmt::format("at least {} pages ({:.0f}% of the file) evicted from "
                                         "the page cache while it was followed",
                                         evicted, 100.0 * static_cast<double>(evicted) / pages));
        if (r.evicted_at_start && *r.evicted_at_start > 0)
            x.evidence.push_back(fmt::format("{} more had been evicted before the recording began",
                                             *r.evicted_at_start));
        if (r.refaulted)
            x.evidence.push_back(
                fmt::format("at least {} pages read again after their eviction", *r.refaulted));
        if (r.final_cached)
            x.evidence.push_back(fmt::format("{:.0f}% of the file cached at the end",
                                             100.0 * *r.final_cached / pages));
        x.advice = "the dataset does not fit in the page cache (or the cgroup's limit): give the "
                   "job more memory, read a smaller subset per epoch, or use a faster disk";
        x.file = r.file.path;
        x.figure_name = "evicted_pages";
        x.figure = static_cast<double>(evicted);
        x.figure_unit = "pages";
        out.push_back(std::move(x));
    }
}

} // namespace

void loader_findings(const Context& context, std::vector<Finding>& out) {
    batches_in_main(context, out);
    thrashing(context, out);
}

} // namespace loaderlens::diagnosis
