// SPDX-License-Identifier: MIT
#include "loaderlens/recording_data.hpp"

#include <algorithm>
#include <iterator>

namespace loaderlens {

namespace {
template <typename T> void move_append(std::vector<T>& to, std::vector<T>& from) {
    if (to.empty()) { // the first read of a reader: take the rows, move none (2 M rows: ~100 MB)
        to = std::move(from);
        return;
    }
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}
} // namespace

bool named_like_shared_library(const std::string& path) {
    return path.ends_with(".so") || path.find(".so.") != std::string::npos;
}

bool ObjectInfo::is_code() const {
    return executable.value_or(false) || named_like_shared_library(path);
}

bool RecordingData::empty() const {
    return parts.empty() && processes.empty() && objects.empty() && fast.empty() &&
           rollup.empty() && maps.empty() && cgroup.empty() && system.empty() && markers.empty() &&
           unavailable.empty() && tier_stats.empty() && residency_files.empty() &&
           cache_residency.empty() && mapped_residency.empty() && loader.epochs.empty() &&
           loader.workers.empty() && loader.progress.empty();
}

void RecordingData::append(RecordingData&& newer) {
    if (!newer.meta.empty()) meta = std::move(newer.meta);
    move_append(parts, newer.parts);
    // Processes come in id order; a changed one replaces its earlier row.
    for (ProcessInfo& p : newer.processes) {
        auto at = std::lower_bound(processes.begin(), processes.end(), p.id,
                                   [](const ProcessInfo& a, std::int64_t id) { return a.id < id; });
        if (at != processes.end() && at->id == p.id)
            *at = std::move(p);
        else
            processes.insert(at, std::move(p));
    }
    move_append(objects, newer.objects);
    move_append(fast, newer.fast);
    move_append(rollup, newer.rollup);
    move_append(maps, newer.maps);
    move_append(cgroup, newer.cgroup);
    move_append(system, newer.system);
    move_append(markers, newer.markers);
    move_append(unavailable, newer.unavailable);
    move_append(tier_stats, newer.tier_stats);
    move_append(residency_files, newer.residency_files);
    move_append(cache_residency, newer.cache_residency);
    move_append(mapped_residency, newer.mapped_residency);
    LoaderRun& run = newer.loader;
    if (!run.config_json.empty()) loader.config_json = std::move(run.config_json);
    if (!run.status.empty()) loader.status = std::move(run.status);
    if (!run.message.empty()) loader.message = std::move(run.message);
    move_append(loader.epochs, run.epochs);
    move_append(loader.workers, run.workers);
    move_append(loader.progress, run.progress);
}

} // namespace loaderlens
