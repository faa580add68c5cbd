// SPDX-License-Identifier: MIT
#include "residency_grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loaderlens::gui {

namespace {

constexpr float not_sampled = std::numeric_limits<float>::quiet_NaN();

struct Snapshot {
    std::int64_t t_ms = 0;
    std::vector<float> shares; // per bucket
};

// Fills each column with the last snapshot at or before the column's end.
ResidencyGrid to_grid(const std::vector<Snapshot>& snapshots, int rows, std::int64_t duration_ms,
                      int columns) {
    ResidencyGrid grid;
    grid.columns = columns;
    grid.rows = rows;
    grid.from_s = 0;
    grid.to_s = static_cast<double>(std::max<std::int64_t>(duration_ms, 1)) / 1000.0;
    grid.cells.assign(static_cast<std::size_t>(columns) * rows, not_sampled);
    std::size_t next = 0;
    const Snapshot* current = nullptr;
    for (int c = 0; c < columns; ++c) {
        const double column_end_ms = (c + 1) * (grid.to_s * 1000.0) / columns;
        while (next < snapshots.size() && snapshots[next].t_ms <= column_end_ms)
            current = &snapshots[next++];
        if (!current) continue;
        std::copy(current->shares.begin(), current->shares.end(),
                  grid.cells.begin() + static_cast<std::ptrdiff_t>(c) * rows);
    }
    return grid;
}

std::vector<float> shares_of(const BucketCounts& counts, const BucketLayout& layout) {
    std::vector<float> out(static_cast<std::size_t>(layout.count), 0.f);
    for (int b = 0; b < layout.count && b < static_cast<int>(counts.size()); ++b) {
        const auto pages = layout.pages_in(b);
        out[static_cast<std::size_t>(b)] =
            pages > 0 ? std::min(1.f, static_cast<float>(counts[static_cast<std::size_t>(b)]) /
                                          static_cast<float>(pages))
                      : 0.f;
    }
    return out;
}

} // namespace

FileResidencyGrids residency_grids(const RecordingData& data, std::int64_t file_id,
                                   const std::map<std::int64_t, ProcessInfo>& processes,
                                   std::int64_t duration_ms, int max_columns, bool loader_file) {
    FileResidencyGrids out;
    for (const auto& f : data.residency_files)
        if (f.id == file_id) out.file = f;
    const BucketLayout& layout = out.file.layout;
    if (out.file.id == 0 || layout.count <= 0) return out;

    std::vector<Snapshot> cache, evicted;
    bool any_evicted = false;
    const double mib_per_page = static_cast<double>(out.file.page_size) / (1024.0 * 1024.0);
    for (const auto& [t, c] : data.cache_residency) {
        if (c.file_id != file_id) continue;
        cache.push_back({t, shares_of(c.buckets, layout)});
        out.cached_mib.push_back(
            {static_cast<double>(t) / 1000.0, static_cast<double>(c.totals.cached) * mib_per_page});
        if (!c.evicted_buckets.empty()) any_evicted = true;
        evicted.push_back({t, shares_of(c.evicted_buckets, layout)});
    }

    // Worker slots: at each residency run, the present pages of every process of the slot.
    std::map<int, std::vector<Snapshot>> slots;
    for (const auto& [id, p] : processes)
        if (p.role == Role::worker && p.slot >= 0) slots.emplace(p.slot, std::vector<Snapshot>{});
    std::map<int, BucketCounts> run_sums;
    std::int64_t run_t = std::numeric_limits<std::int64_t>::min();
    auto close_run = [&] {
        if (run_t == std::numeric_limits<std::int64_t>::min()) return;
        for (auto& [slot, snapshots] : slots) {
            auto sum = run_sums.find(slot);
            snapshots.push_back({run_t, sum == run_sums.end()
                                            ? std::vector<float>(layout.count, 0.f)
                                            : shares_of(sum->second, layout)});
        }
        run_sums.clear();
    };
    for (const auto& [t, m] : data.mapped_residency) {
        if (m.file_id != file_id) continue;
        if (t != run_t) {
            close_run();
            run_t = t;
        }
        auto p = processes.find(m.process_id);
        if (p == processes.end() || p->second.role != Role::worker || p->second.slot < 0) continue;
        BucketCounts& sum = run_sums[p->second.slot];
        sum.resize(std::max(sum.size(), m.buckets.size()), 0);
        for (std::size_t b = 0; b < m.buckets.size(); ++b)
            sum[b] += m.buckets[b];
    }
    close_run();

    const int columns = std::max(
        1, std::min<int>(max_columns, static_cast<int>(std::max<std::size_t>(cache.size(), 1))));
    out.cache = to_grid(cache, layout.count, duration_ms, columns);
    if (any_evicted) out.evicted = to_grid(evicted, layout.count, duration_ms, columns);
    for (const auto& [slot, snapshots] : slots)
        out.slot_grids.emplace_back(slot, to_grid(snapshots, layout.count, duration_ms, columns));
    if (loader_file)
        for (const LoaderProgress& p : data.loader.progress)
            out.read_progress.push_back(
                {static_cast<double>(p.t_ms) / 1000.0,
                 static_cast<double>(p.distinct_bytes) / (1024.0 * 1024.0)});
    return out;
}

} // namespace loaderlens::gui
