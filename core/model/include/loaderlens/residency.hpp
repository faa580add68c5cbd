// SPDX-License-Identifier: MIT
// Page residency of files, along the file: what the page cache holds (global) and what each
// process has mapped and present (its RSS of that file), both counted in pages per bucket of
// file offsets so that a heatmap (offset x time) can be drawn. Sources: docs/figures.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

// Splits a file of `file_pages` pages into at most `wanted` buckets of equal page count (the
// last one may be shorter). Bucket i covers pages [i * bucket_pages, (i + 1) * bucket_pages).
struct BucketLayout {
    std::int64_t file_pages = 0;
    std::int64_t bucket_pages = 1;
    int count = 0;

    static BucketLayout make(std::int64_t file_pages, int wanted);
    int bucket_of(std::int64_t page) const { return static_cast<int>(page / bucket_pages); }
    std::int64_t first_page(int bucket) const { return bucket * bucket_pages; }
    // Pages in bucket i (the last one may hold fewer).
    std::int64_t pages_in(int bucket) const;
};

// Page counts per bucket; element i belongs to bucket i of the file's layout.
using BucketCounts = std::vector<std::int32_t>;

// How the page cache of a file was read.
enum class CacheMethod { cachestat, mincore, unavailable };
const char* to_string(CacheMethod method);

// Page-cache state of a whole file, in pages. cachestat(2) gives all five; the mincore fallback
// only `cached` (the others stay empty = unavailable).
struct CacheCounts {
    std::int64_t cached = 0;
    std::optional<std::int64_t> dirty, writeback, evicted, recently_evicted;
};

// A file whose residency the recording follows.
struct ResidencyFile {
    std::int64_t id = 0; // recording-wide, assigned by the sampler (1, 2, ...)
    std::string path;
    std::uint64_t device = 0, inode = 0; // st_dev, st_ino
    std::int64_t size_bytes = 0;
    std::int64_t page_size = 4096;
    BucketLayout layout;
    CacheMethod method = CacheMethod::unavailable;
    std::string unavailable_reason; // why the page cache cannot be read, when method is unavailable
    bool requested = false;         // given with --file (followed even if no process maps it)
    std::int64_t first_ms = 0;      // recording clock: when the residency tier first saw it
    int part = 0;                   // the node's part in a merged recording (schema 7); else 0
    // A requested file the recorder could not open is stored with inode 0 (no real file has
    // it): its size, device and inode are unknown, not 0.
    bool identified() const { return inode != 0; }
};

// One residency sample of a file's page cache.
struct CacheResidency {
    std::int64_t file_id = 0;
    CacheCounts totals;
    BucketCounts buckets;         // cached pages per bucket
    BucketCounts evicted_buckets; // evicted pages per bucket (cachestat only, else empty)
    // Buckets read from the kernel for this sample; the others carry their last read, the oldest
    // of them carried_age_ms old (0 when every bucket was read). Empty in recordings before
    // schema 9, where every bucket was read at every sample (docs/residency.md).
    std::optional<std::int32_t> read_buckets;
    std::optional<std::int64_t> carried_age_ms;
    // Whether every bucket's figure comes from this sample's read (true where not recorded).
    bool all_read_now() const {
        return !read_buckets || *read_buckets == static_cast<std::int32_t>(buckets.size());
    }
};

// One residency sample of one process's mappings of a file: pages of the file inside its
// mappings (virtual extent, clipped to the file) and, of those, present in its page tables.
struct MappedResidency {
    std::int64_t file_id = 0;
    std::int64_t process_id = 0;
    std::int64_t mapped_pages = 0;
    std::int64_t present_pages = 0;
    BucketCounts buckets; // present pages per bucket
    // Computed from the present pages of the tree's processes in the same run: a page present
    // in k of them counts 1/k (page_sharing.hpp). Empty in recordings before schema 5.
    std::optional<std::int64_t> pss_kb;
    // Processes outside the tree that mapped the file at the residency tier's last look, and
    // those it could not look at (permission denied): with either, pss_kb may be too large.
    // Empty: no look yet.
    std::optional<std::int32_t> outside_sharers, outside_unreadable;
};

// What one residency run found.
struct ResidencySample {
    std::vector<ResidencyFile> new_files; // first seen in this run
    std::vector<CacheResidency> cache;
    std::vector<MappedResidency> mapped;
};

} // namespace loaderlens
