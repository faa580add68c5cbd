// SPDX-License-Identifier: MIT
// Findings about datasets read with pread rather than mapped: an HDF5 file opened before fork
// (scenario 13), HDF5's chunk cache, one per process and dataset, and a dataset whose pages live
// in the page cache where no worker maps them (scenario 14; any pread loader, HDF5's included).
// docs/findings.md, docs/hdf5.md.
#include "diagnosis_parts.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace loaderlens::diagnosis {

namespace {

// The dataset's cached pages at the end must be at least this (below, a cache too small to
// matter to any accounting) ...
constexpr std::int64_t outside_workers_min_kb = 4 * 1024;
// ... and the workers' mapped pages of it at most this share of them.
constexpr double outside_workers_max_mapped_share = 0.01;
// Chunk caches worth a line: their sum over the workers at least this.
constexpr std::int64_t chunk_cache_total_min_kb = 16 * 1024;

std::vector<std::int64_t> worker_ids(const Context& c) {
    std::vector<std::int64_t> ids;
    for (const ProcessSummary& p : c.report.processes)
        if (p.info.role == Role::worker) ids.push_back(p.info.id);
    return ids;
}

// Σ over workers of RssAnon growth from each one's first to its last sample (KiB), and how many.
std::pair<std::int64_t, int> worker_anon_growth(const Context& c) {
    std::int64_t sum = 0;
    int workers = 0;
    for (std::int64_t id : worker_ids(c)) {
        const auto first =
            first_value(c.data, c.rows, id, Figure::rss_anon, 0, c.report.duration_ms);
        const auto last = last_value(c.data, c.rows, id, Figure::rss_anon, 0, c.report.duration_ms);
        if (!first || !last) continue;
        sum += std::max<std::int64_t>(0, last->kb - first->kb);
        ++workers;
    }
    return {sum, workers};
}

void hdf5_before_fork(const Context& c, const nlohmann::json& config, std::vector<Finding>& out) {
    const auto& hdf5 = config["hdf5"];
    if (hdf5.value("open", "") != "parent" || config.value("workers", 0) < 1) return;
    const std::vector<std::int64_t> workers = worker_ids(c);
    if (workers.empty()) return;
    const std::string path = config.value("dataset", "");
    Finding x;
    x.kind = "hdf5_opened_before_fork";
    x.severity = Severity::warning;
    x.title = fmt::format("the HDF5 file {} was opened in main before the workers were forked, "
                          "and they read through the inherited handle: open it lazily in each "
                          "worker",
                          path);
    x.evidence.push_back("the loader's configuration says hdf5_open=parent (h5py.File in "
                         "Dataset.__init__)");
    x.evidence.push_back(fmt::format(
        "{} workers share one open file description and a copy of main's HDF5 state (metadata "
        "cache, chunk cache, free lists, file locks) taken at fork; each worker's copy then "
        "diverges, and nothing tells main or the other workers",
        workers.size()));
    x.advice = "open the file on first use in each worker (in __getitem__: if self.file is None: "
               "self.file = h5py.File(path, 'r'), or in worker_init_fn), never in __init__; "
               "reads through an inherited handle are correct here only because the file is "
               "read-only and HDF5's sec2 driver reads with pread (docs/hdf5.md); writes, "
               "h5py's object locks and other drivers are not";
    x.process_ids = workers;
    x.file = path;
    x.figure_name = "workers";
    x.figure = static_cast<double>(workers.size());
    out.push_back(std::move(x));
}

void chunk_cache_per_worker(const Context& c, const nlohmann::json& config,
                            std::vector<Finding>& out) {
    const auto& hdf5 = config["hdf5"];
    if (hdf5.value("storage", "") != "chunked") return;
    const std::int64_t cache = hdf5.value("chunk_cache_bytes", std::int64_t{0});
    const std::int64_t chunk = hdf5.value("chunk_bytes", std::int64_t{0});
    const int workers = std::max(config.value("workers", 0), 1);
    const std::int64_t total_kb = cache / 1024 * workers;
    const bool too_small = chunk > cache; // HDF5 bypasses a cache a chunk does not fit
    if (total_kb < chunk_cache_total_min_kb && !too_small) return;
    const auto [growth_kb, measured] = worker_anon_growth(c);
    Finding x;
    x.kind = "hdf5_chunk_cache";
    x.severity = Severity::info;
    const std::string path = config.value("dataset", "");
    if (too_small) {
        x.title = fmt::format(
            "HDF5 chunks of {} ({}) do not fit its chunk cache of {}: every read "
            "fetches{} whole chunks again",
            path, size_text(chunk / 1024), size_text(cache / 1024),
            hdf5.value("filters", nlohmann::json::array()).empty() ? "" : " and decompresses");
    } else {
        x.title = fmt::format("each of {} processes reading {} keeps its own HDF5 chunk cache of "
                              "up to {}: {} in all, as anonymous memory that RSS and the cgroup "
                              "count",
                              workers, path, size_text(cache / 1024), size_text(total_kb));
    }
    x.evidence.push_back(
        fmt::format("chunk cache {} per process and dataset{} (H5Pset_chunk_cache), "
                    "chunks of {}",
                    size_text(cache / 1024),
                    hdf5.value("chunk_cache_default", false) ? " (HDF5's default)" : "",
                    size_text(chunk / 1024)));
    if (measured > 0)
        x.evidence.push_back(fmt::format("workers' RssAnon grew by {} on average from their first "
                                         "sample to their last",
                                         size_text(growth_kb / measured)));
    x.advice = too_small ? "raise rdcc_nbytes (h5py.File(..., rdcc_nbytes=...)) above one chunk, "
                           "or write the file with smaller chunks (a few records each)"
                         : "size rdcc_nbytes for the chunks one worker revisits, not the whole "
                           "file: the cache is per worker (and per open dataset), so the job "
                           "holds workers x rdcc_nbytes";
    x.process_ids = worker_ids(c);
    x.file = path;
    x.explains_kb = too_small ? 0 : total_kb;
    x.figure_name = "chunk_cache_total_kb";
    x.figure = static_cast<double>(total_kb);
    x.figure_unit = "KiB";
    out.push_back(std::move(x));
}

// Scenario 14: the page cache holds the dataset while no worker maps any of it (pread, HDF5).
void page_cache_outside_workers(const Context& c, const nlohmann::json& config,
                                std::vector<Finding>& out) {
    // Mapped reads put the pages in the workers too (RSS sees them): only pread loaders, which
    // the loader's configuration names (residency knows the dataset file of replays only).
    if (!config.is_object() || config.value("read", "") != "pread") return;
    const std::vector<std::int64_t> workers = worker_ids(c);
    if (workers.empty()) return;
    for (const FileResidencySummary& r : c.report.residency) {
        if (!r.loader_data_file || !r.final_cached || r.file.page_size <= 0) continue;
        const std::int64_t cached_kb = *r.final_cached * r.file.page_size / 1024;
        if (cached_kb < outside_workers_min_kb) continue;
        std::int64_t mapped_pages = 0;
        for (const auto& p : r.processes)
            if (std::find(workers.begin(), workers.end(), p.process_id) != workers.end())
                mapped_pages = std::max(mapped_pages, p.present.value.value_or(0));
        const std::int64_t mapped_kb = mapped_pages * r.file.page_size / 1024;
        if (static_cast<double>(mapped_kb) >
            outside_workers_max_mapped_share * static_cast<double>(cached_kb))
            continue;
        Finding x;
        x.kind = "page_cache_outside_workers";
        x.severity = Severity::info;
        x.title = fmt::format("{} of {} lives in the page cache, not in the workers: RSS-based "
                              "accounting does not see it; the cgroup does",
                              size_text(cached_kb), r.file.path);
        const std::string how = config.contains("hdf5") && !config["hdf5"].is_null()
                                    ? "HDF5 reads it with pread into its chunk cache"
                                    : "the loader reads it with pread";
        x.evidence.push_back(fmt::format(
            "at the end {} of the file was cached ({:.0f}%, {} before the loader started); {}, so "
            "no worker maps any of it (the most any worker mapped: {})",
            size_text(cached_kb),
            r.file.size_bytes > 0 ? 100.0 * cached_kb * 1024 / r.file.size_bytes : 0.0,
            size_text(r.cached_before.value_or(0) * r.file.page_size / 1024), how,
            size_text(mapped_kb)));
        std::string views = "peaks:";
        for (const char* key : {"slurm_linux", "slurm_usepss", "cgroup_usage", "k8s_working_set"})
            if (const SchedulerView* v = c.diagnosis.view(key); v && v->peak)
                views += fmt::format(" {} {};", v->name, size_text(*v->peak));
        views.pop_back();
        x.evidence.push_back(views + " (Σ RSS and Σ PSS leave the cache out; the cgroup charges "
                                     "it to whoever read it first)");
        x.advice = "nothing leaks: clean page cache is reclaimed under pressure. Size a cgroup or "
                   "Kubernetes limit for the page cache the job keeps warm, or let the kernel "
                   "reclaim it; an RSS limit (SLURM jobacct_gather/linux) will never see it";
        x.process_ids = workers;
        x.file = r.file.path;
        x.from_ms = 0;
        x.to_ms = c.report.duration_ms;
        x.explains_kb = cached_kb;
        x.figure_name = "cached_kb";
        x.figure = static_cast<double>(cached_kb);
        x.figure_unit = "KiB";
        out.push_back(std::move(x));
    }
}

} // namespace

void hdf5_findings(const Context& context, std::vector<Finding>& out) {
    const nlohmann::json config = loader_config(context.data);
    if (config.is_object() && config.contains("hdf5") && config["hdf5"].is_object()) {
        hdf5_before_fork(context, config, out);
        chunk_cache_per_worker(context, config, out);
    }
    page_cache_outside_workers(context, config, out);
}

} // namespace loaderlens::diagnosis
