// SPDX-License-Identifier: MIT
// Page-cache residency of one file, read the cheapest way the kernel allows:
//  - cachestat(2) (Linux >= 6.5): cached, dirty, writeback, evicted and recently evicted pages of a
//    range in one call, without mapping the file;
//  - else mincore(2) on the probe's own read-only shared mapping: cached pages only.
// Both answer only to a caller that owns the file, may write it, or has CAP_FOWNER. Otherwise
// cachestat fails with EPERM and mincore pretends every page is resident, so the probe reports
// "unavailable" with the reason instead of a false 100%.
#pragma once

#include "loaderlens/residency.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loaderlens {

class CachestatBuckets; // the counts kept between cachestat samples (src/cachestat_buckets.hpp)

// What a planned read may skip: with cachestat, once reading every bucket costs more than
// `exact_limit_us` of CPU, a read re-reads the suspect buckets and a rotating slice of the others
// and carries the rest (src/cachestat_buckets.hpp).
struct CacheReadPlan {
    std::int64_t now_ms = 0; // steady clock, for the carried buckets' age
    // Rotate once a whole read costs more than this much CPU (µs); -1: never (every read exact).
    std::int64_t exact_limit_us = -1;
    int rotation_runs = 32; // in rotation, every bucket is read at least this often
    // Buckets that may have moved since the last read, read whatever the slice; empty: none known.
    std::vector<bool> suspects;
    bool read_all = false; // the file was written since: read every bucket
};

// How much of a planned read came from the kernel.
struct CacheReadInfo {
    int read_buckets = 0;            // buckets read now; the others carry an earlier read
    std::int64_t oldest_read_ms = 0; // the oldest read a bucket carries (now_ms: all read now)
    bool rotating = false;
};

class PageCacheProbe {
  public:
    // Opens `path` read-only. `preferred` is cachestat (falls back to mincore when the kernel lacks
    // it) or mincore (forced, for comparison). When `expect_device`/`expect_inode` are non-zero the
    // file must still be that one (a dataset replaced after it was mapped is another file).
    // Never throws: see method() and problem().
    explicit PageCacheProbe(const std::string& path, CacheMethod preferred = CacheMethod::cachestat,
                            std::uint64_t expect_device = 0, std::uint64_t expect_inode = 0);
    ~PageCacheProbe();
    PageCacheProbe(PageCacheProbe&& other) noexcept;
    PageCacheProbe& operator=(PageCacheProbe&& other) noexcept;
    PageCacheProbe(const PageCacheProbe&) = delete;
    PageCacheProbe& operator=(const PageCacheProbe&) = delete;

    CacheMethod method() const { return method_; }
    // Why the page cache of this file cannot be read (empty while it can).
    const std::string& problem() const { return problem_; }
    std::int64_t size_bytes() const { return size_bytes_; }
    std::uint64_t device() const { return device_; }
    std::uint64_t inode() const { return inode_; }

    // Cached pages per bucket (and, with cachestat, evicted pages per bucket) plus the totals,
    // which are the sums over the buckets. Empty when unavailable; problem() then says why.
    // With cachestat, a read re-reads only the buckets whose counts moved since the last one.
    std::optional<CacheCounts> read(const BucketLayout& layout, BucketCounts& cached,
                                    BucketCounts* evicted = nullptr);
    // As read(), by `plan` (mincore reads every page whatever the plan); `info` says what was read.
    std::optional<CacheCounts> read(const BucketLayout& layout, BucketCounts& cached,
                                    BucketCounts* evicted, const CacheReadPlan& plan,
                                    CacheReadInfo& info);
    // cachestat(2) calls the last read made (0 with mincore).
    int cachestat_calls() const;
    // Asks the open file for its size again (fstat): true when it changed since the last ask (a
    // file written while followed), after which size_bytes() is the new size and a mincore probe
    // maps the whole file again. The file stays the one opened: a path replaced since names
    // another file, which is another object (a new probe).
    bool refresh_size();
    // Whether the file's modification time moved since the last call (refresh_size() looks): a
    // write, whose pages a planned read must not carry.
    bool take_modified() { return std::exchange(modified_, false); }

  private:
    std::optional<CacheCounts> read_cachestat(const BucketLayout& layout, BucketCounts& cached,
                                              BucketCounts* evicted, const CacheReadPlan* plan);
    std::optional<CacheCounts> read_mincore(const BucketLayout& layout, BucketCounts& cached);
    void use_mincore(); // maps the file; unavailable (with the reason) when that fails
    void close_all();

    std::string path_;
    int fd_ = -1;
    CacheMethod method_ = CacheMethod::unavailable;
    std::string problem_;
    std::int64_t size_bytes_ = 0;
    std::int64_t mtime_ns_ = 0;
    bool modified_ = false;
    std::uint64_t device_ = 0, inode_ = 0;
    void* mapping_ = nullptr; // mincore only
    std::size_t mapping_bytes_ = 0;
    std::unique_ptr<CachestatBuckets> buckets_; // cachestat only
};

// Whether cachestat(2) can be used: probed once on a memfd of our own, so false both on kernels
// before 6.5 and under a seccomp filter that refuses the call.
bool kernel_has_cachestat();

} // namespace loaderlens
