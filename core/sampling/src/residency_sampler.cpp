// SPDX-License-Identifier: MIT
#include "loaderlens/residency_sampler.hpp"

#include "loaderlens/page_sharing.hpp"
#include "loaderlens/proc_text.hpp"
#include "page_bitmap.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens {

namespace {

// Pages of the file covered by at least one of the mappings (a file mapped twice over the same
// offsets counts once), clipped to the file.
std::int64_t mapped_extent(const std::vector<const FileMapping*>& mappings, std::int64_t page,
                           std::int64_t file_pages) {
    std::vector<std::pair<std::int64_t, std::int64_t>> spans;
    for (const FileMapping* m : mappings) {
        const auto first = static_cast<std::int64_t>(m->offset) / page;
        const auto count = static_cast<std::int64_t>(m->end - m->start) / page;
        spans.emplace_back(std::min(first, file_pages), std::min(first + count, file_pages));
    }
    std::sort(spans.begin(), spans.end());
    std::int64_t total = 0, covered_to = 0;
    for (auto [first, last] : spans) {
        first = std::max(first, covered_to);
        if (last > first) total += last - first;
        covered_to = std::max(covered_to, last);
    }
    return total;
}

// Files every process maps that are nobody's dataset: locale archives, shared data of the system.
// A dataset kept there can still be followed with --file.
bool is_system_file(const std::string& path) {
    for (const char* prefix : {"/usr/lib/", "/usr/share/", "/lib/", "/lib64/", "/etc/"})
        if (path.starts_with(prefix)) return true;
    return false;
}

bool process_gone(int error) {
    return error == ENOENT || error == ESRCH;
}

} // namespace

ResidencySampler::ResidencySampler(ResidencyOptions options)
    : options_(std::move(options)), page_size_(::sysconf(_SC_PAGESIZE)) {
    for (const std::string& path : options_.files)
        track(path, 0, 0, true);
}

ResidencySampler::Tracked* ResidencySampler::track(const std::string& path, std::uint64_t device,
                                                   std::uint64_t inode, bool requested) {
    PageCacheProbe probe(path, options_.cache_method, 0, inode);
    ResidencyFile file;
    file.id = next_file_id_++;
    file.path = path;
    file.device = probe.device() ? probe.device() : device;
    file.inode = probe.inode() ? probe.inode() : inode;
    file.size_bytes = probe.size_bytes();
    file.page_size = page_size_;
    file.layout =
        BucketLayout::make((file.size_bytes + page_size_ - 1) / page_size_, options_.buckets);
    file.method = probe.method();
    if (file.method == CacheMethod::unavailable) file.unavailable_reason = probe.problem();
    file.requested = requested;
    // A requested file that cannot be opened has no identity: key it by its id alone.
    FileKey key = file.inode ? FileKey{file.device, file.inode}
                             : FileKey{0, static_cast<std::uint64_t>(file.id)};
    auto [it, inserted] = tracked_.try_emplace(key, Tracked{std::move(file), std::move(probe)});
    return &it->second;
}

void ResidencySampler::sample(const std::vector<ProcessInfo>& live, ResidencySample& out,
                              Problems& problems) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    // A file written since the last run moves no page table of the tree (the tree may stand
    // still) but its kept rows were counted against its old size: walk again.
    const bool files_changed = refresh_files();
    const bool still = options_.still_max_age_ms > 0 && stillness_.look(live) && last_walk_ms_ &&
                       now - *last_walk_ms_ < options_.still_max_age_ms && !files_changed;
    walked_last_ = !still;
    if (still) {
        for (auto& [key, tracked] : tracked_)
            read_cache(tracked, out, problems, now);
        look_for_outside_sharers(live, now);
        out.mapped = last_walk_rows_;
        for (MappedResidency& row : out.mapped)
            for (const auto& [key, tracked] : tracked_)
                if (tracked.file.id == row.file_id) mark_outside(key, row);
        return;
    }
    std::vector<std::pair<const ProcessInfo*, std::vector<FileMapping>>> all;
    std::set<FileKey> executable;
    for (const ProcessInfo& info : live) {
        int error = 0;
        auto text = read_text_file("/proc/" + std::to_string(info.key.pid) + "/maps", &error);
        if (!text) {
            if (!process_gone(error))
                problems.push_back({info.id, "residency", unavailable_reason("maps", error)});
            continue;
        }
        auto mappings = parse_file_mappings(*text);
        for (const auto& m : mappings)
            if (m.executable) executable.insert({m.device, m.inode});
        all.emplace_back(&info, std::move(mappings));
    }

    // The dynamic loader maps a library read-only before it maps its code executable: a file
    // followed from such a moment is dropped once it shows up executable.
    std::erase_if(tracked_, [&](const auto& entry) {
        const auto& [key, tracked] = entry;
        if (tracked.file.requested || !executable.contains(key)) return false;
        ignored_[key] = "mapped executable (a program or library)";
        return true;
    });

    // Files seen for the first time: follow the data files, remember the others.
    for (const auto& [info, mappings] : all) {
        for (const auto& m : mappings) {
            const FileKey key{m.device, m.inode};
            if (find(m) || ignored_.contains(key)) continue;
            if (executable.contains(key)) {
                ignored_[key] = "mapped executable (a program or library)";
                continue;
            }
            if (is_system_file(m.path)) {
                ignored_[key] = "a system file (locale archive, shared data)";
                continue;
            }
            // Inode only: on btrfs (and overlayfs before 6.8) the device in /proc/PID/maps is
            // not the st_dev that stat() gives for the same file.
            struct stat st {};
            if (::stat(m.path.c_str(), &st) == 0 && st.st_ino != m.inode) {
                ignored_[key] = "the path now names another file";
                continue;
            }
            // Not remembered: a file that grows past the minimum is followed from then on.
            if (st.st_ino == m.inode && st.st_size < options_.min_size_bytes) continue;
            track(m.path, m.device, m.inode, false);
        }
    }

    look_for_outside_sharers(live, now);
    run_rows_.clear();
    bitmaps_used_ = 0;
    for (const auto& [info, mappings] : all)
        sample_process(*info, mappings, out, problems);
    share_pages(out);

    // After the walk, which says where the tree's present pages moved: the cache may have there.
    for (auto& [key, tracked] : tracked_) {
        read_cache(tracked, out, problems, now, moved_buckets(tracked));
        if (!tracked.reported) { // after the first read, which may have changed the method
            tracked.file.method = tracked.probe.method();
            if (tracked.file.method == CacheMethod::unavailable)
                tracked.file.unavailable_reason = tracked.probe.problem();
            out.new_files.push_back(tracked.file);
            tracked.reported = true;
        }
    }
    // Repeated while the tree stands still: the rows of mapped files, not the one row of zeros
    // that says a file was unmapped (mapped_pages 0), which is said once.
    last_walk_rows_.clear();
    for (const MappedResidency& row : out.mapped)
        if (row.mapped_pages > 0) last_walk_rows_.push_back(row);
    last_walk_ms_ = now;
}

bool ResidencySampler::refresh_files() {
    bool changed = follow_replaced_requests();
    for (auto& [key, tracked] : tracked_) {
        if (!tracked.probe.refresh_size()) continue;
        follow_new_size(tracked);
        changed = true;
    }
    return changed;
}

void ResidencySampler::follow_new_size(Tracked& tracked) {
    const std::int64_t old_id = tracked.file.id;
    ResidencyFile& file = tracked.file;
    file.id = next_file_id_++;
    file.size_bytes = tracked.probe.size_bytes();
    file.layout =
        BucketLayout::make((file.size_bytes + page_size_ - 1) / page_size_, options_.buckets);
    tracked.reported = false; // written to new_files by this run, after its first read
    // A process that mapped the old generation maps the new one: no row of zeros for the old id.
    for (auto& [key, state] : processes_)
        if (state.mapped_files.erase(old_id) > 0) state.mapped_files.insert(file.id);
}

bool ResidencySampler::follow_replaced_requests() {
    bool changed = false;
    std::vector<std::string> paths;
    for (const auto& [key, tracked] : tracked_)
        if (tracked.file.requested) paths.push_back(tracked.file.path);
    for (const std::string& path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue; // gone: keep
        // A file the recorder may stat but not read (another user's: its directory is
        // searchable) stays the unidentified file it was, with its reason: taking its stat()
        // identity made a new file of size 0 at every run.
        if (::access(path.c_str(), R_OK) != 0) continue;
        const FileKey now{static_cast<std::uint64_t>(st.st_dev),
                          static_cast<std::uint64_t>(st.st_ino)};
        bool current = false;
        for (auto it = tracked_.begin(); it != tracked_.end();) {
            ResidencyFile& f = it->second.file;
            if (!f.requested || f.path != path) {
                ++it;
                continue;
            }
            if (f.device == now.first && f.inode == now.second) {
                current = true;
                ++it;
                continue;
            }
            // Another file at the path (replaced, or created after the recording began): the old
            // one stays followed while the tree maps it, as a file like any other; one that was
            // never opened has no rows and goes.
            f.requested = false;
            it = f.identified() ? std::next(it) : tracked_.erase(it);
        }
        if (current) continue;
        if (auto it = tracked_.find(now); it != tracked_.end()) {
            it->second.file.requested = true; // followed already because the tree maps it
            continue;
        }
        track(path, 0, now.second, true);
        changed = true;
    }
    return changed;
}

void ResidencySampler::look_for_outside_sharers(const std::vector<ProcessInfo>& live,
                                                std::int64_t now) {
    if (last_outside_look_ms_ && now - *last_outside_look_ms_ < options_.outside_look_ms) return;
    std::set<FileKey> files;
    for (const auto& [key, tracked] : tracked_)
        if (tracked.file.inode != 0) files.insert(key);
    if (files.empty()) return; // nothing to look for yet: look again at the next run
    std::set<pid_t> tree;
    for (const ProcessInfo& info : live)
        tree.insert(info.key.pid);
    outside_ = count_outside_sharers(tree, files);
    last_outside_look_ms_ = now;
}

std::vector<std::uint64_t>& ResidencySampler::take_bitmap(std::size_t words) {
    if (bitmaps_used_ == bitmaps_.size()) bitmaps_.emplace_back();
    std::vector<std::uint64_t>& bits = bitmaps_[bitmaps_used_++];
    bits.assign(words, 0);
    return bits;
}

void ResidencySampler::mark_outside(const FileKey& key, MappedResidency& row) const {
    if (!last_outside_look_ms_) return; // no look yet: unknown, not 0
    auto it = outside_.sharers.find(key);
    row.outside_sharers = it == outside_.sharers.end() ? 0 : it->second;
    row.outside_unreadable = outside_.unreadable;
}

void ResidencySampler::share_pages(ResidencySample& out) {
    const double page_kb = static_cast<double>(page_size_) / 1024.0;
    for (const auto& [tracked, rows] : run_rows_) {
        std::vector<const std::uint64_t*> bitmaps;
        for (const auto& [row, bitmap] : rows)
            bitmaps.push_back(bitmaps_[bitmap].data());
        const std::size_t words = bitmaps_[rows.front().second].size();
        const std::vector<double> pages = proportional_pages(bitmaps, words);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            MappedResidency& m = out.mapped[rows[i].first];
            m.pss_kb = std::llround(pages[i] * page_kb);
            mark_outside({tracked->file.device, tracked->file.inode}, m);
        }
    }
}

ResidencySampler::Tracked* ResidencySampler::find(const FileMapping& m) {
    if (auto it = tracked_.find({m.device, m.inode}); it != tracked_.end()) return &it->second;
    // A requested file is keyed by stat()'s device, which on btrfs is not the one in maps.
    for (auto& [key, tracked] : tracked_)
        if (tracked.file.requested && tracked.file.inode == m.inode && tracked.file.path == m.path)
            return &tracked;
    return nullptr;
}

std::vector<bool> ResidencySampler::moved_buckets(Tracked& tracked) {
    const BucketLayout& layout = tracked.file.layout;
    BucketCounts present(static_cast<std::size_t>(layout.count), 0);
    if (auto it = run_rows_.find(&tracked); it != run_rows_.end()) {
        std::vector<std::uint64_t> any(bitmaps_[it->second.front().second].size(), 0);
        for (const auto& [row, bitmap] : it->second)
            for (std::size_t w = 0; w < any.size(); ++w)
                any[w] |= bitmaps_[bitmap][w];
        present = bucket_counts(any, layout);
    }
    std::vector<bool> moved(present.size(), false);
    const bool comparable = tracked.present_union.size() == present.size() &&
                            tracked.last_cached.size() == present.size();
    for (std::size_t b = 0; b < present.size(); ++b)
        moved[b] = !comparable || present[b] != tracked.present_union[b] ||
                   present[b] > tracked.last_cached[b];
    tracked.present_union = std::move(present);
    return moved;
}

void ResidencySampler::read_cache(Tracked& tracked, ResidencySample& out, Problems& problems,
                                  std::int64_t now_ms, std::vector<bool> suspects) {
    if (tracked.probe.method() == CacheMethod::unavailable) return;
    CacheResidency cache{.file_id = tracked.file.id};
    BucketCounts evicted;
    const CacheReadPlan plan{.now_ms = now_ms,
                             .exact_limit_us = options_.cache_exact_limit_us,
                             .rotation_runs = options_.cache_rotation_runs,
                             .suspects = std::move(suspects),
                             .read_all = tracked.probe.take_modified()};
    CacheReadInfo info;
    auto counts = tracked.probe.read(tracked.file.layout, cache.buckets, &evicted, plan, info);
    if (!counts) {
        if (!tracked.had_problem) problems.push_back({0, "residency", tracked.probe.problem()});
        tracked.had_problem = true;
        return;
    }
    cache.totals = *counts;
    cache.evicted_buckets = std::move(evicted);
    cache.read_buckets = info.read_buckets;
    cache.carried_age_ms = now_ms - info.oldest_read_ms;
    tracked.last_cached = cache.buckets;
    out.cache.push_back(std::move(cache));
}

void ResidencySampler::sample_process(const ProcessInfo& info,
                                      const std::vector<FileMapping>& mappings,
                                      ResidencySample& out, Problems& problems) {
    std::map<Tracked*, std::vector<const FileMapping*>> by_file;
    for (const auto& m : mappings) {
        Tracked* tracked = find(m);
        if (tracked && tracked->file.layout.count > 0) by_file[tracked].push_back(&m);
    }
    auto state_it = processes_.find(info.key);
    if (by_file.empty() && state_it == processes_.end()) return; // maps none of our files
    if (state_it == processes_.end())
        state_it =
            processes_
                .emplace(info.key,
                         ProcessState{PagemapReader(info.key.pid, options_.allow_pagemap_scan), {}})
                .first;
    ProcessState& state = state_it->second;

    std::set<std::int64_t> now_mapped;
    for (const auto& [tracked, file_mappings] : by_file) {
        const ResidencyFile& file = tracked->file;
        const std::int64_t file_pages = file.layout.file_pages;
        const std::size_t bitmap = bitmaps_used_;
        std::vector<std::uint64_t>& present_bits =
            take_bitmap(static_cast<std::size_t>(file_pages / 64 + 1));
        bool ok = true;
        for (const FileMapping* m : file_mappings) {
            const std::int64_t first_page = static_cast<std::int64_t>(m->offset) / page_size_;
            ok = state.reader.for_each_present(
                m->start, m->end,
                [&](std::uint64_t start, std::uint64_t end) {
                    const std::int64_t first =
                        first_page + static_cast<std::int64_t>(start - m->start) / page_size_;
                    const std::int64_t last =
                        first + static_cast<std::int64_t>(end - start) / page_size_;
                    if (first < file_pages)
                        set_bits(present_bits, first, std::min(last, file_pages));
                },
                m->shared);
            if (!ok) break;
        }
        if (!ok) {
            --bitmaps_used_; // the process has no row in this run
            if (!process_gone(state.reader.error()))
                problems.push_back(
                    {info.id, "residency", unavailable_reason("pagemap", state.reader.error())});
            return;
        }
        MappedResidency row{.file_id = file.id, .process_id = info.id};
        row.mapped_pages = mapped_extent(file_mappings, page_size_, file_pages);
        row.buckets = bucket_counts(present_bits, file.layout);
        for (std::int32_t n : row.buckets)
            row.present_pages += n;
        run_rows_[tracked].emplace_back(out.mapped.size(), bitmap);
        out.mapped.push_back(std::move(row));
        now_mapped.insert(file.id);
        pagemap_method_ = to_string(state.reader.method());
    }
    // A file it mapped at the last run and no longer does: one row of zeros, so that a series
    // read as "unchanged until the next row" drops to 0 at the unmap.
    for (std::int64_t id : state.mapped_files) {
        if (now_mapped.contains(id)) continue;
        for (const auto& [key, tracked] : tracked_)
            if (tracked.file.id == id)
                out.mapped.push_back({.file_id = id,
                                      .process_id = info.id,
                                      .buckets = BucketCounts(
                                          static_cast<std::size_t>(tracked.file.layout.count), 0),
                                      .pss_kb = 0});
    }
    state.mapped_files = std::move(now_mapped);
}

void ResidencySampler::forget(const ProcessKey& key) {
    processes_.erase(key);
}

} // namespace loaderlens
