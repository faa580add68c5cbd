// SPDX-License-Identifier: MIT
// cachestat(2) counts per bucket of one file, kept from one sample to the next so that a sample
// costs one whole-file call while nothing moved, and a few calls per bucket that did, instead of
// one call per bucket (256 system calls, ~1 µs each on these VMs: 304-334 µs per sample of a
// 1 GiB file before this, docs/residency.md).
//
// A sample first asks for the whole file. Counts are sums over pages, so where the answer equals
// the sum of the kept buckets nothing is re-read; elsewhere the range is halved: the left half is
// asked for, the right half is the range's count minus the left's, and each half that moved is
// halved again down to single buckets. A change that leaves all five counts of a range equal (a
// page evicted in one bucket while a page with a shadow entry comes back in another) would go
// unseen: every `full_read_every`-th sample reads every bucket, which bounds how long.
#pragma once

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
    const std::vector<RangeCounts>& buckets() const { return buckets_; }
    RangeCounts total() const { return sum(0, static_cast<int>(buckets_.size())); }
    // cachestat calls the last refresh made.
    int calls() const { return calls_; }

  private:
    bool ask(int first, int last, RangeCounts& out); // buckets [first, last)
    bool read_every_bucket();
    bool settle(int first, int last, const RangeCounts& now);
    RangeCounts sum(int first, int last) const;

    BucketLayout layout_;
    std::int64_t page_size_ = 0;
    const Read* read_ = nullptr; // during refresh()
    std::vector<RangeCounts> buckets_;
    int refreshes_since_full_ = 0;
    bool valid_ = false;
    int calls_ = 0;
};

} // namespace loaderlens
