// SPDX-License-Identifier: MIT
#include "cachestat_buckets.hpp"

namespace loaderlens {

RangeCounts& RangeCounts::operator+=(const RangeCounts& other) {
    cached += other.cached;
    dirty += other.dirty;
    writeback += other.writeback;
    evicted += other.evicted;
    recently_evicted += other.recently_evicted;
    return *this;
}

RangeCounts RangeCounts::operator-(const RangeCounts& other) const {
    return {cached - other.cached, dirty - other.dirty, writeback - other.writeback,
            evicted - other.evicted, recently_evicted - other.recently_evicted};
}

bool RangeCounts::any_negative() const {
    return cached < 0 || dirty < 0 || writeback < 0 || evicted < 0 || recently_evicted < 0;
}

bool CachestatBuckets::refresh(const BucketLayout& layout, std::int64_t page_size,
                               const Read& read) {
    calls_ = 0;
    read_ = &read;
    const bool same_layout = layout.file_pages == layout_.file_pages &&
                             layout.bucket_pages == layout_.bucket_pages &&
                             layout.count == layout_.count && page_size == page_size_;
    layout_ = layout;
    page_size_ = page_size;
    bool ok;
    if (!valid_ || !same_layout || ++refreshes_since_full_ >= full_read_every) {
        ok = read_every_bucket();
    } else {
        RangeCounts whole;
        ok = ask(0, layout_.count, whole) && settle(0, layout_.count, whole);
    }
    read_ = nullptr;
    valid_ = ok;
    return ok;
}

bool CachestatBuckets::ask(int first, int last, RangeCounts& out) {
    ++calls_;
    const auto offset = static_cast<std::uint64_t>(layout_.first_page(first) * page_size_);
    const std::int64_t end_page = layout_.first_page(last - 1) + layout_.pages_in(last - 1);
    const auto length =
        static_cast<std::uint64_t>((end_page - layout_.first_page(first)) * page_size_);
    return (*read_)(offset, length, out);
}

bool CachestatBuckets::read_every_bucket() {
    refreshes_since_full_ = 0;
    buckets_.assign(static_cast<std::size_t>(layout_.count), {});
    for (int b = 0; b < layout_.count; ++b)
        if (!ask(b, b + 1, buckets_[static_cast<std::size_t>(b)])) return false;
    return true;
}

RangeCounts CachestatBuckets::sum(int first, int last) const {
    RangeCounts out;
    for (int b = first; b < last; ++b)
        out += buckets_[static_cast<std::size_t>(b)];
    return out;
}

bool CachestatBuckets::settle(int first, int last, const RangeCounts& now) {
    if (now == sum(first, last)) return true; // nothing moved here (see the header)
    if (last - first == 1) {
        buckets_[static_cast<std::size_t>(first)] = now;
        return true;
    }
    const int middle = first + (last - first) / 2;
    RangeCounts left, right;
    if (!ask(first, middle, left)) return false;
    right = now - left;
    // The cache moved between the two calls: the difference is no count of the right half.
    if (right.any_negative() && !ask(middle, last, right)) return false;
    return settle(first, middle, left) && settle(middle, last, right);
}

} // namespace loaderlens
