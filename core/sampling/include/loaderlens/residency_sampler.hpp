// SPDX-License-Identifier: MIT
// Residency tier: for every regular data file the tree maps (and every file asked for), the page
// cache along the file (PageCacheProbe) and each process's present pages of it (PagemapReader),
// counted per bucket of file offsets.
//
// Which files: mapped by some process of the tree, at least `min_size_bytes` big, never mapped
// executable (programs and libraries) and not under /usr/lib, /usr/share, /lib, /lib64 or /etc
// (locale archives and other system data every process maps), plus `files` always.
//
// A followed file that changes size (written while followed: an LMDB built by the job) is read
// at its new size from the next run on: a new ResidencyFile (new id, same path, device and
// inode, the new size and bucket layout) is reported in new_files, and that run's and later rows
// carry the new id; the old id's series ends with its last row (no row of zeros). A requested
// file whose path names another file since (replaced, or created after the recording began) is
// followed as a new object with its new identity. docs/residency.md.
#pragma once

#include "loaderlens/outside_sharers.hpp"
#include "loaderlens/page_cache.hpp"
#include "loaderlens/pagemap.hpp"
#include "loaderlens/residency.hpp"
#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/tree_stillness.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace loaderlens {

struct ResidencyOptions {
    int buckets = 256;
    std::int64_t min_size_bytes = 1 << 20;
    std::vector<std::string> files;                    // followed even when no process maps them
    CacheMethod cache_method = CacheMethod::cachestat; // cachestat falls back to mincore
    bool allow_pagemap_scan = true;                    // false: read 8-byte pagemap entries
    // How often to look for processes outside the tree that map a followed file
    // (outside_sharers.hpp); the computed PSS rows carry what the last look found.
    std::int64_t outside_look_ms = 5000;
    // While the tree stands still (TreeStillness) its present pages cannot have moved: a run
    // then reads the page cache only and records the last walk's pagemap rows again, at most
    // this long after that walk (0: walk every run).
    std::int64_t still_max_age_ms = 5000;
    // cachestat walks every folio it is asked about: once reading a file's every bucket costs
    // more than this much CPU (µs), a run reads only the buckets where the tree's present pages
    // moved and a rotating slice of the others, each bucket at least every
    // `cache_rotation_runs` runs; the rest carry their last read, and the sample says so
    // (CacheResidency::read_buckets, carried_age_ms). -1: every run reads every bucket.
    std::int64_t cache_exact_limit_us = 2000;
    int cache_rotation_runs = 32;
};

class ResidencySampler {
  public:
    explicit ResidencySampler(ResidencyOptions options);

    void sample(const std::vector<ProcessInfo>& live, ResidencySample& out, Problems& problems);
    void forget(const ProcessKey& key);
    // How the last run read pagemaps ("PAGEMAP_SCAN" or "pagemap"), empty before any.
    const std::string& pagemap_method() const { return pagemap_method_; }
    // Whether the last run walked the pagemaps (false: the tree stood still, rows repeated).
    bool walked_last() const { return walked_last_; }

  private:
    using FileKey = std::pair<std::uint64_t, std::uint64_t>; // device, inode
    struct Tracked {
        ResidencyFile file;
        PageCacheProbe probe;
        bool reported = false;    // written to new_files
        bool had_problem = false; // a read failure already reported
        // Per bucket, at the last walk: pages some process of the tree had present (each is
        // cached), and the cached pages the last read gave.
        BucketCounts present_union, last_cached;
    };
    struct ProcessState {
        PagemapReader reader;
        std::set<std::int64_t> mapped_files; // files it mapped at the last run
    };

    Tracked* track(const std::string& path, std::uint64_t device, std::uint64_t inode,
                   bool requested);
    // Files whose size changed since the last run get a new id and layout; requested paths that
    // name another file now are followed anew. True when anything changed (the run must walk).
    bool refresh_files();
    void follow_new_size(Tracked& tracked);
    bool follow_replaced_requests();
    Tracked* find(const FileMapping& mapping);
    // `suspects`: buckets that may have moved since the last read (empty: none known).
    void read_cache(Tracked& tracked, ResidencySample& out, Problems& problems, std::int64_t now_ms,
                    std::vector<bool> suspects = {});
    // The buckets of the file where this walk's present pages differ from the last walk's (a
    // page faulted in or unmapped: the cache may have moved there), or exceed the cache's count.
    std::vector<bool> moved_buckets(Tracked& tracked);
    void sample_process(const ProcessInfo& info, const std::vector<FileMapping>& mappings,
                        ResidencySample& out, Problems& problems);
    void look_for_outside_sharers(const std::vector<ProcessInfo>& live, std::int64_t now_ms);
    // What the last look found for the file (nothing before the first look: unknown, not 0).
    void mark_outside(const FileKey& key, MappedResidency& row) const;
    // Fills pss_kb and the outside sharers of this run's rows, file by file.
    void share_pages(ResidencySample& out);
    std::vector<std::uint64_t>& take_bitmap(std::size_t words);

    ResidencyOptions options_;
    std::int64_t page_size_;
    std::map<FileKey, Tracked> tracked_;
    std::map<FileKey, std::string> ignored_; // mapped files not followed, and why
    std::map<ProcessKey, ProcessState> processes_;
    std::int64_t next_file_id_ = 1;
    std::string pagemap_method_;
    // This run's present-page bitmaps (one bit per file page), one per row it wrote, kept until
    // every process is read so that a page's sharers can be counted; reused from run to run.
    std::vector<std::vector<std::uint64_t>> bitmaps_;
    std::size_t bitmaps_used_ = 0;
    // Per followed file: this run's rows (index in out.mapped, index in bitmaps_).
    std::map<const Tracked*, std::vector<std::pair<std::size_t, std::size_t>>> run_rows_;
    std::optional<std::int64_t> last_outside_look_ms_;
    OutsideSharerCount outside_;
    TreeStillness stillness_;
    std::vector<MappedResidency> last_walk_rows_;
    std::optional<std::int64_t> last_walk_ms_;
    bool walked_last_ = false;
};

} // namespace loaderlens
