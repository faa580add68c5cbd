// SPDX-License-Identifier: MIT
#include "loaderlens/page_cache.hpp"

#include "cachestat_buckets.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

namespace loaderlens {

namespace {

// cachestat(2) has no wrapper in Debian 12's glibc and no definition in its kernel headers.
constexpr long cachestat_syscall = 451; // x86-64 and the generic table alike
struct CachestatRange {
    std::uint64_t off, len;
};
struct Cachestat {
    std::uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

long call_cachestat(int fd, std::uint64_t offset, std::uint64_t length, Cachestat& out) {
    CachestatRange range{offset, length};
    return ::syscall(cachestat_syscall, fd, &range, &out, 0);
}

// The kernel's rule for both cachestat and mincore on a file (mm/mincore.c can_do_mincore,
// mm/filemap.c can_do_cachestat): the caller owns the file, may write it, or has CAP_FOWNER.
// Without it mincore reports every page resident, so the answer must not be trusted.
bool may_inspect_cache(int fd, const struct stat& st) {
    if (st.st_uid == ::geteuid()) return true;
    if (::geteuid() == 0) return true; // CAP_FOWNER (and CAP_DAC_OVERRIDE) as root
    return ::faccessat(AT_FDCWD, ("/proc/self/fd/" + std::to_string(fd)).c_str(), W_OK,
                       AT_EACCESS) == 0;
}

std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::string errno_text(int error) {
    return std::strerror(error);
}

} // namespace

bool kernel_has_cachestat() {
    // Asked on a memfd of our own, which the kernel's permission rule always lets us inspect: a
    // failure is then ENOSYS (kernel before 6.5) or a seccomp filter refusing the call (container
    // runtimes refuse syscalls newer than their profile, often with EPERM). Either way, mincore.
    static const bool has = [] {
        const int fd = static_cast<int>(::syscall(SYS_memfd_create, "loaderlens-cachestat", 0));
        if (fd < 0) return false;
        Cachestat out{};
        const bool works = ::ftruncate(fd, 4096) == 0 && call_cachestat(fd, 0, 0, out) == 0;
        ::close(fd);
        return works;
    }();
    return has;
}

PageCacheProbe::PageCacheProbe(const std::string& path, CacheMethod preferred,
                               std::uint64_t expect_device, std::uint64_t expect_inode)
    : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) {
        problem_ = "cannot open " + path + ": " + errno_text(errno);
        return;
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        problem_ = path + ": not a regular file";
        close_all();
        return;
    }
    size_bytes_ = st.st_size;
    mtime_ns_ = mtime_ns(st);
    device_ = st.st_dev;
    inode_ = st.st_ino;
    if ((expect_device && expect_device != device_) || (expect_inode && expect_inode != inode_)) {
        problem_ = path + ": the path now names another file (replaced after it was mapped)";
        close_all();
        return;
    }
    if (!may_inspect_cache(fd_, st)) {
        // cachestat would fail with EPERM and mincore would claim every page resident.
        problem_ = "the kernel shows the page cache of " + path +
                   " only to its owner, a user who may write it, or root";
        close_all();
        return;
    }
    if (preferred == CacheMethod::cachestat && kernel_has_cachestat()) {
        method_ = CacheMethod::cachestat;
        return;
    }
    use_mincore();
}

void PageCacheProbe::use_mincore() {
    if (size_bytes_ > 0) {
        mapping_bytes_ = static_cast<std::size_t>(size_bytes_);
        mapping_ = ::mmap(nullptr, mapping_bytes_, PROT_READ, MAP_SHARED, fd_, 0);
        if (mapping_ == MAP_FAILED) {
            mapping_ = nullptr;
            problem_ = "cannot map " + path_ + " for mincore: " + errno_text(errno);
            close_all();
            return;
        }
    }
    method_ = CacheMethod::mincore;
}

bool PageCacheProbe::refresh_size() {
    if (fd_ < 0) return false;
    struct stat st {};
    if (::fstat(fd_, &st) != 0) return false;
    if (mtime_ns(st) != mtime_ns_) modified_ = true;
    mtime_ns_ = mtime_ns(st);
    if (st.st_size == size_bytes_) return false;
    size_bytes_ = st.st_size;
    if (method_ == CacheMethod::mincore) {
        // mincore answers for the probe's own mapping only: map the file at its new size.
        if (mapping_) ::munmap(mapping_, mapping_bytes_);
        mapping_ = nullptr;
        mapping_bytes_ = 0;
        use_mincore();
    }
    return true;
}

PageCacheProbe::~PageCacheProbe() {
    close_all();
}

PageCacheProbe::PageCacheProbe(PageCacheProbe&& other) noexcept {
    *this = std::move(other);
}

PageCacheProbe& PageCacheProbe::operator=(PageCacheProbe&& other) noexcept {
    if (this == &other) return *this;
    close_all();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    method_ = std::exchange(other.method_, CacheMethod::unavailable);
    problem_ = std::move(other.problem_);
    size_bytes_ = other.size_bytes_;
    mtime_ns_ = other.mtime_ns_;
    modified_ = other.modified_;
    device_ = other.device_;
    inode_ = other.inode_;
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    buckets_ = std::move(other.buckets_);
    return *this;
}

int PageCacheProbe::cachestat_calls() const {
    return buckets_ ? buckets_->calls() : 0;
}

void PageCacheProbe::close_all() {
    if (mapping_) ::munmap(mapping_, mapping_bytes_);
    mapping_ = nullptr;
    mapping_bytes_ = 0;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (problem_.empty()) problem_ = "closed";
    method_ = CacheMethod::unavailable;
}

std::optional<CacheCounts> PageCacheProbe::read(const BucketLayout& layout, BucketCounts& cached,
                                                BucketCounts* evicted, const CacheReadPlan& plan,
                                                CacheReadInfo& info) {
    info = {.read_buckets = layout.count, .oldest_read_ms = plan.now_ms};
    cached.assign(static_cast<std::size_t>(layout.count), 0);
    if (evicted) evicted->clear();
    if (method_ == CacheMethod::cachestat) {
        auto counts = read_cachestat(layout, cached, evicted, &plan);
        if (counts && buckets_) {
            info.read_buckets = buckets_->read_buckets();
            info.oldest_read_ms = buckets_->oldest_read_ms();
            info.rotating = buckets_->rotating();
        }
        return counts;
    }
    return read(layout, cached, evicted);
}

std::optional<CacheCounts> PageCacheProbe::read(const BucketLayout& layout, BucketCounts& cached,
                                                BucketCounts* evicted) {
    cached.assign(static_cast<std::size_t>(layout.count), 0);
    if (evicted) evicted->clear();
    switch (method_) {
    case CacheMethod::cachestat:
        return read_cachestat(layout, cached, evicted, nullptr);
    case CacheMethod::mincore:
        return read_mincore(layout, cached);
    case CacheMethod::unavailable:
        break;
    }
    return std::nullopt;
}

std::optional<CacheCounts> PageCacheProbe::read_cachestat(const BucketLayout& layout,
                                                          BucketCounts& cached,
                                                          BucketCounts* evicted,
                                                          const CacheReadPlan* plan) {
    const auto page = static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
    if (!buckets_) buckets_ = std::make_unique<CachestatBuckets>();
    const CachestatBuckets::Read call = [this](std::uint64_t offset, std::uint64_t length,
                                               RangeCounts& out) {
        Cachestat cs{};
        if (call_cachestat(fd_, offset, length, cs) != 0) return false;
        out = {static_cast<std::int64_t>(cs.nr_cache), static_cast<std::int64_t>(cs.nr_dirty),
               static_cast<std::int64_t>(cs.nr_writeback), static_cast<std::int64_t>(cs.nr_evicted),
               static_cast<std::int64_t>(cs.nr_recently_evicted)};
        return true;
    };
    if (!(plan ? buckets_->refresh_planned(layout, page, call, *plan)
               : buckets_->refresh(layout, page, call))) {
        const int error = errno;
        // Refused although the call works on our own memfd: the kernel's rule says no, and
        // mincore would then claim every page resident. Unavailable, never a false 100%.
        if (error == EPERM) {
            problem_ = "cachestat on " + path_ +
                       ": not permitted (the kernel shows a page cache only to the file's "
                       "owner, a user who may write it, or CAP_FOWNER)";
            close_all();
            return std::nullopt;
        }
        problem_ = "cachestat on " + path_ + ": " + errno_text(error);
        return std::nullopt;
    }
    if (evicted) evicted->assign(static_cast<std::size_t>(layout.count), 0);
    const std::vector<RangeCounts>& counts = buckets_->buckets();
    for (std::size_t b = 0; b < counts.size(); ++b) {
        cached[b] = static_cast<std::int32_t>(counts[b].cached);
        if (evicted) (*evicted)[b] = static_cast<std::int32_t>(counts[b].evicted);
    }
    const RangeCounts total = buckets_->total();
    return CacheCounts{.cached = total.cached,
                       .dirty = total.dirty,
                       .writeback = total.writeback,
                       .evicted = total.evicted,
                       .recently_evicted = total.recently_evicted};
}

std::optional<CacheCounts> PageCacheProbe::read_mincore(const BucketLayout& layout,
                                                        BucketCounts& cached) {
    const auto page = static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
    const std::int64_t mapped_pages = static_cast<std::int64_t>(mapping_bytes_) / page +
                                      (static_cast<std::int64_t>(mapping_bytes_) % page != 0);
    const std::int64_t pages = std::min(layout.file_pages, mapped_pages);
    // In chunks, so that a 100 GiB file needs a 16 KiB vector, not a 25 MiB one.
    constexpr std::int64_t chunk_pages = 16384;
    unsigned char vec[chunk_pages];
    CacheCounts totals;
    for (std::int64_t first = 0; first < pages; first += chunk_pages) {
        const std::int64_t count = std::min(chunk_pages, pages - first);
        auto* address = static_cast<char*>(mapping_) + first * page;
        if (::mincore(address, static_cast<std::size_t>(count * page), vec) != 0) {
            problem_ = "mincore on " + path_ + ": " + errno_text(errno);
            return std::nullopt;
        }
        // Bucket by bucket over the chunk, without a division per page (that alone cost ~12%
        // against vmtouch's loop in bench/residency_bench.cpp).
        for (std::int64_t i = 0; i < count;) {
            const int bucket = layout.bucket_of(first + i);
            const std::int64_t bucket_end =
                std::min(count, layout.first_page(bucket) + layout.pages_in(bucket) - first);
            std::int32_t in_bucket = 0;
            for (; i < bucket_end; ++i)
                in_bucket += vec[i] & 1;
            cached[static_cast<std::size_t>(bucket)] += in_bucket;
            totals.cached += in_bucket;
        }
    }
    return totals;
}

} // namespace loaderlens
