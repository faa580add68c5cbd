// SPDX-License-Identifier: MIT
#include "cachestat_buckets.hpp"

#include <algorithm>
#include <ctime>

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

namespace {
double thread_cpu_us() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}
} // namespace

bool CachestatBuckets::start(const BucketLayout& layout, std::int64_t page_size, const Read& read) {
    calls_ = 0;
    read_ = &read;
    const bool same_layout = layout.file_pages == layout_.file_pages &&
                             layout.bucket_pages == layout_.bucket_pages &&
                             layout.count == layout_.count && page_size == page_size_;
    layout_ = layout;
    page_size_ = page_size;
    return same_layout;
}

bool CachestatBuckets::refresh(const BucketLayout& layout, std::int64_t page_size,
                               const Read& read) {
    const bool same_layout = start(layout, page_size, read);
    const bool ok = !valid_ || !same_layout ? read_every_bucket() : read_exact();
    read_ = nullptr;
    valid_ = ok;
    read_buckets_ = layout_.count;
    return ok;
}

bool CachestatBuckets::refresh_planned(const BucketLayout& layout, std::int64_t page_size,
                                       const Read& read, const CacheReadPlan& plan) {
    const bool same_layout = start(layout, page_size, read);
    const double began = thread_cpu_us();
    bool ok;
    if (!valid_ || !same_layout || plan.read_all || !rotating_) {
        ok = !valid_ || !same_layout || plan.read_all ? read_every_bucket() : read_exact();
        read_buckets_ = layout_.count;
        read_ms_.assign(static_cast<std::size_t>(layout_.count), plan.now_ms);
        whole_cost_us_ = thread_cpu_us() - began;
    } else {
        ok = read_rotation(plan);
        // The slice's cost scaled to the file: the folios of the buckets read stand for the rest.
        if (read_buckets_ > 0)
            whole_cost_us_ = (thread_cpu_us() - began) * layout_.count / read_buckets_;
    }
    read_ = nullptr;
    valid_ = ok;
    // Back to exact reads only well below the limit, so that a file near it does not flip.
    const double limit = static_cast<double>(plan.exact_limit_us);
    rotating_ = ok && plan.exact_limit_us >= 0 && whole_cost_us_ > (rotating_ ? limit / 2 : limit);
    return ok;
}

std::int64_t CachestatBuckets::oldest_read_ms() const {
    if (read_ms_.empty()) return 0;
    return *std::min_element(read_ms_.begin(), read_ms_.end());
}

bool CachestatBuckets::read_exact() {
    if (++refreshes_since_full_ >= full_read_every) return read_every_bucket();
    RangeCounts whole;
    return ask(0, layout_.count, whole) && settle(0, layout_.count, whole);
}

bool CachestatBuckets::read_rotation(const CacheReadPlan& plan) {
    const int count = layout_.count;
    read_buckets_ = 0;
    if (count == 0) return true;
    const int runs = std::max(plan.rotation_runs, 1);
    const int slice = (count + runs - 1) / runs;
    std::vector<bool> now(static_cast<std::size_t>(count), false);
    for (int i = 0; i < slice; ++i)
        now[static_cast<std::size_t>((cursor_ + i) % count)] = true;
    cursor_ = (cursor_ + slice) % count;
    if (plan.suspects.size() == now.size())
        for (std::size_t b = 0; b < now.size(); ++b)
            if (plan.suspects[b]) now[b] = true;
    for (int b = 0; b < count; ++b) {
        const auto i = static_cast<std::size_t>(b);
        if (!now[i]) continue;
        if (!ask(b, b + 1, buckets_[i])) return false;
        read_ms_[i] = plan.now_ms;
        ++read_buckets_;
    }
    return true;
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
