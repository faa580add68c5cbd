// SPDX-License-Identifier: MIT
// cachestat(2) counts per bucket of one file, kept from one sample to the next.
//
// cachestat walks every folio of the range it is asked for, so a read costs what the file's folio
// count costs, however few calls it makes: a 1 GiB file cached by its writer (262,144 small
// folios) took 7.8-10.8 ms per whole-file call on these VMs, a file cached by a sequential read
// (large folios) a hundredth of that (issue 31, docs/residency.md). Two ways, chosen per file by
// what the last reads cost in CPU:
//
// Exact (refresh() alone, or refresh_planned() while a whole read is cheap): a sample first asks
// for the whole file. Counts are sums over pages, so where the answer equals the sum of the kept
// buckets nothing is re-read; elsewhere the range is halved: the left half is asked for, the right
// half is the range's count minus the left's, and each half that moved is halved again down to
// single buckets. A change that leaves all five counts of a range equal (a page evicted in one
// bucket while a page with a shadow entry comes back in another) would go unseen: every
// `full_read_every`-th sample reads every bucket, which bounds how long.
//
// In rotation (refresh_planned() once a whole read costs more than the plan's limit): a sample
// reads only the buckets the caller says may have moved (where the tree's present pages moved:
// a page mapped present is cached) and a rotating slice of the others, so that every bucket is
// read again at least every `rotation_runs` samples; the others carry their last read, and
// read_buckets()/oldest_read_ms() say how many were read and how old the oldest carried one is.
#pragma once

#include "loaderlens/page_cache.hpp"
#include "loaderlens/residency.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace loaderlens {

struct RangeCounts {
    std::int64_t cached = 0, dirty = 0, writeback = 0, evicted = 0, recently_evicted = 0;
    bool operator==(const RangeCounts&) const = default;
    RangeCounts& operator+=(const RangeCounts& other);
    RangeCounts operator-(const RangeCounts& other) const;
    bool any_negative() const;
};

class CachestatBuckets {
  public:
    // Asks the kernel for the counts of [offset, offset + length) bytes; false when it failed
    // (errno says why).
    using Read = std::function<bool(std::uint64_t offset, std::uint64_t length, RangeCounts&)>;
    static constexpr int full_read_every = 30;

    // Brings every bucket's counts up to date; false on a failed call (errno), after which the
    // next refresh reads every bucket again.
    bool refresh(const BucketLayout& layout, std::int64_t page_size, const Read& read);
    // As refresh() while a whole read costs at most plan.exact_limit_us; beyond, in rotation.
    bool refresh_planned(const BucketLayout& layout, std::int64_t page_size, const Read& read,
                         const CacheReadPlan& plan);
    const std::vector<RangeCounts>& buckets() const { return buckets_; }
    RangeCounts total() const { return sum(0, static_cast<int>(buckets_.size())); }
    // cachestat calls the last refresh made.
    int calls() const { return calls_; }
    // Buckets the last refresh brought up to date (all of them but in rotation).
    int read_buckets() const { return read_buckets_; }
    // The oldest read any bucket carries (plan.now_ms when every bucket was read).
    std::int64_t oldest_read_ms() const;
    bool rotating() const { return rotating_; }
    // What reading every bucket costs, by the last reads (µs of the thread's CPU).
    double whole_read_cost_us() const { return whole_cost_us_; }

  private:
    bool ask(int first, int last, RangeCounts& out); // buckets [first, last)
    bool read_every_bucket();
    bool read_exact();
    bool read_rotation(const CacheReadPlan& plan);
    bool settle(int first, int last, const RangeCounts& now);
    RangeCounts sum(int first, int last) const;
    bool start(const BucketLayout& layout, std::int64_t page_size, const Read& read);

    BucketLayout layout_;
    std::int64_t page_size_ = 0;
    const Read* read_ = nullptr; // during refresh()
    std::vector<RangeCounts> buckets_;
    std::vector<std::int64_t> read_ms_; // per bucket, when it was last read (refresh_planned)
    int refreshes_since_full_ = 0;
    bool valid_ = false;
    int calls_ = 0;
    int read_buckets_ = 0;
    bool rotating_ = false;
    int cursor_ = 0; // the next bucket of the rotating slice
    double whole_cost_us_ = 0;
};

} // namespace loaderlens
