// SPDX-License-Identifier: MIT
// The residency part of the report: per file, how the page cache and each process's mappings
// filled, and, for a replay, how far residency ran ahead of the loader's reads.
#include "loaderlens/report.hpp"
#include "loaderlens/residency_generations.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace loaderlens {

namespace {

// Reading thresholds (share of the file read at least once) at which the report shows a row.
constexpr double checkpoint_fractions[] = {0.10, 0.25, 0.50, 0.75, 0.99};
// The headline amplification is taken once this much was read, so that the batches still being
// read (up to one per worker, not yet counted) weigh little against what was counted.
constexpr double headline_fraction = 0.01;

std::string loader_data_file(const LoaderRun& loader) {
    // Recording::loader_run() refused a config that is not a JSON object within bounds.
    const nlohmann::json config = loader.config_json.empty()
                                      ? nlohmann::json(nullptr)
                                      : nlohmann::json::parse(loader.config_json, nullptr, false);
    const auto file = config.is_object() ? config.find("data_file") : config.end();
    return file != config.end() && file->is_string() ? file->get<std::string>() : "";
}

void summarize_cache(FileResidencySummary& s, std::int64_t t, const CacheResidency& now,
                     const CacheResidency* before) {
    ++s.samples;
    const CacheCounts& c = now.totals;
    s.cached.offer(c.cached, t);
    s.dirty.offer(c.dirty, t);
    s.writeback.offer(c.writeback, t);
    s.evicted.offer(c.evicted, t);
    if (!before) s.evicted_at_start = c.evicted;
    if (!now.all_read_now() && now.carried_age_ms)
        s.max_carried_age_ms = std::max(s.max_carried_age_ms.value_or(0), *now.carried_age_ms);
    if (before && c.evicted && before->totals.evicted && now.evicted_buckets.empty())
        s.evicted_during = saturating_add(
            s.evicted_during.value_or(0),
            std::max<std::int64_t>(0, saturating_sub(*c.evicted, *before->totals.evicted)));
    if (!s.first_cached) s.first_cached = c.cached;
    s.final_cached = c.cached;
    if (!s.time_to_90_ms &&
        saturating_mul(c.cached, 10) >= saturating_mul(s.file.layout.file_pages, 9))
        s.time_to_90_ms = t;
    // The recording checked each vector's length against the file's layout; all four must agree.
    const std::size_t buckets = now.buckets.size();
    if (!before || now.evicted_buckets.size() != buckets ||
        before->evicted_buckets.size() != buckets || before->buckets.size() != buckets ||
        buckets == 0)
        return;
    std::int64_t refaulted = 0, evicted = 0; // int32 counts, taken apart in int64: no overflow
    for (std::size_t b = 0; b < buckets; ++b) {
        const std::int64_t shadows_gone = std::max<std::int64_t>(
            0, std::int64_t{before->evicted_buckets[b]} - now.evicted_buckets[b]);
        evicted += std::max<std::int64_t>(0, std::int64_t{now.evicted_buckets[b]} -
                                                 before->evicted_buckets[b]);
        const std::int64_t pages_back =
            std::max<std::int64_t>(0, std::int64_t{now.buckets[b]} - before->buckets[b]);
        refaulted += std::min(shadows_gone, pages_back);
    }
    s.refaulted = saturating_add(s.refaulted.value_or(0), refaulted);
    s.evicted_during = saturating_add(s.evicted_during.value_or(0), evicted);
}

// Residency at one sample against the loader's last progress report before it.
ResidencyCheckpoint checkpoint(const FileResidencySummary& s, std::int64_t t,
                               const CacheResidency& cache, const LoaderProgress* progress,
                               const std::vector<MappedResidency>& mapped_now,
                               const std::vector<ProcessSummary>& processes) {
    const auto size = static_cast<double>(std::max<std::int64_t>(s.file.size_bytes, 1));
    const auto page = static_cast<double>(s.file.page_size);
    ResidencyCheckpoint point{.t_ms = t};
    point.cached_fraction = std::min(1.0, static_cast<double>(cache.totals.cached) * page / size);
    if (!progress) return point;
    point.read_fraction = static_cast<double>(progress->distinct_bytes) / size;
    if (progress->distinct_bytes > 0) {
        const std::int64_t gained = std::max<std::int64_t>(
            0, saturating_sub(cache.totals.cached, s.cached_before.value_or(0)));
        point.cache_amplification =
            static_cast<double>(gained) * page / static_cast<double>(progress->distinct_bytes);
    }
    double fraction_sum = 0, amplification_sum = 0;
    int workers = 0;
    for (const MappedResidency& m : mapped_now) {
        const ProcessInfo* p = find_process(processes, m.process_id);
        if (!p || p->role != Role::worker || p->generation != progress->generation) continue;
        const auto slot = static_cast<std::size_t>(p->slot);
        if (p->slot < 0 || slot >= progress->worker_distinct_bytes.size()) continue;
        const std::int64_t read = progress->worker_distinct_bytes[slot];
        if (read <= 0) continue;
        fraction_sum += static_cast<double>(m.present_pages) * page / size;
        amplification_sum +=
            static_cast<double>(m.present_pages) * page / static_cast<double>(read);
        ++workers;
    }
    if (workers > 0) {
        point.worker_mapped_fraction = fraction_sum / workers;
        point.worker_mapped_amplification = amplification_sum / workers;
    }
    return point;
}

void add_loader_view(FileResidencySummary& s, const std::vector<Timed<CacheResidency>>& cache,
                     const std::vector<Timed<MappedResidency>>& mapped, const LoaderRun& loader,
                     const std::vector<ProcessSummary>& processes,
                     const std::map<std::int64_t, std::int64_t>& latest) {
    // Rows of any generation of the file (residency_generations.hpp).
    auto of_file = [&](std::int64_t id) {
        auto it = latest.find(id);
        return it != latest.end() && it->second == s.file.id;
    };
    std::map<std::int64_t, std::vector<MappedResidency>> mapped_at;
    for (const auto& [t, m] : mapped)
        if (of_file(m.file_id)) mapped_at[t].push_back(m);
    const std::vector<MappedResidency> none;
    std::size_t next_threshold = 0;
    bool first_read_shown = false;
    auto progress = loader.progress.begin();
    const LoaderProgress* last = nullptr;
    for (const auto& [t, c] : cache) {
        if (!of_file(c.file_id)) continue;
        while (progress != loader.progress.end() && progress->t_ms <= t)
            last = &*progress++;
        auto it = mapped_at.find(t);
        const ResidencyCheckpoint point =
            checkpoint(s, t, c, last, it == mapped_at.end() ? none : it->second, processes);
        if (!s.headline && point.read_fraction >= headline_fraction) s.headline = point;
        // The first sample (the cache before or as reading began), the first with reads counted,
        // then one per threshold crossed.
        bool show = s.checkpoints.empty() || (!first_read_shown && point.read_fraction > 0);
        first_read_shown = first_read_shown || point.read_fraction > 0;
        while (next_threshold < std::size(checkpoint_fractions) &&
               point.read_fraction >= checkpoint_fractions[next_threshold]) {
            show = true;
            ++next_threshold;
        }
        if (show) s.checkpoints.push_back(point);
    }
}

} // namespace

std::vector<FileResidencySummary>
summarize_residency(const Recording& recording, const RecordingData& data,
                    const std::vector<ProcessSummary>& processes) {
    return summarize_residency(data, processes,
                               recording.meta_number("loader.data_file_cached_pages_before"));
}

std::vector<FileResidencySummary> summarize_residency(const RecordingData& data,
                                                      const std::vector<ProcessSummary>& processes,
                                                      Kib cached_before) {
    const LoaderRun& loader = data.loader;
    std::vector<FileResidencySummary> out;
    // A file that changed size while followed, once, at its latest size; its rows of every
    // generation in one series (residency_generations.hpp).
    for (const ResidencyFile& file : latest_files(data.residency_files))
        out.push_back({.file = file});
    if (out.empty()) return out;
    const std::map<std::int64_t, std::int64_t> latest = latest_generations(data.residency_files);
    auto find = [&out, &latest](std::int64_t id) -> FileResidencySummary* {
        auto it = latest.find(id);
        if (it == latest.end()) return nullptr;
        for (auto& s : out)
            if (s.file.id == it->second) return &s;
        return nullptr;
    };
    const auto& cache = data.cache_residency;
    std::map<std::int64_t, const CacheResidency*> previous; // by summary
    for (const auto& [t, c] : cache) {
        FileResidencySummary* s = find(c.file_id);
        if (!s) continue;
        summarize_cache(*s, t, c, previous[s->file.id]);
        previous[s->file.id] = &c;
    }
    const auto& mapped = data.mapped_residency;
    for (const auto& [t, m] : mapped) {
        FileResidencySummary* s = find(m.file_id);
        if (!s) continue;
        auto it = std::find_if(s->processes.begin(), s->processes.end(),
                               [&](const auto& p) { return p.process_id == m.process_id; });
        if (it == s->processes.end())
            it = s->processes.insert(s->processes.end(), {.process_id = m.process_id});
        it->present.offer(m.present_pages, t);
        it->final_present = m.present_pages;
        it->mapped_pages = std::max(it->mapped_pages, m.mapped_pages);
        const Kib rss = saturating_mul(m.present_pages, s->file.page_size) / 1024;
        it->rss.offer(rss, t);
        it->final_rss = rss;
        it->pss.offer(m.pss_kb, t);
        it->final_pss = m.pss_kb;
        auto most = [](std::optional<std::int32_t>& seen, std::optional<std::int32_t> now) {
            if (now && (!seen || *now > *seen)) seen = now;
        };
        most(it->outside_sharers, m.outside_sharers);
        most(it->outside_unreadable, m.outside_unreadable);
    }
    const std::string data_file = loader_data_file(loader);
    for (auto& s : out) {
        std::sort(s.processes.begin(), s.processes.end(),
                  [](const auto& a, const auto& b) { return a.process_id < b.process_id; });
        if (data_file.empty() || s.file.path != data_file) continue;
        s.loader_data_file = true;
        s.cached_before = cached_before;
        add_loader_view(s, cache, mapped, loader, processes, latest);
    }
    return out;
}

} // namespace loaderlens
