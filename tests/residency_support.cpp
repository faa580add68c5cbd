// SPDX-License-Identifier: MIT
// Helpers of the residency tests: page-cache states set and read without the code under test.
#include "residency_support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <numeric>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;

namespace loaderlens::test::residency {

std::int64_t page_size() {
    static const std::int64_t size = ::sysconf(_SC_PAGESIZE);
    return size;
}

namespace {

struct PmScanArg { // include/uapi/linux/fs.h (Linux 6.7)
    std::uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    std::uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
constexpr unsigned long pagemap_scan_request = _IOWR('f', 16, PmScanArg);

// mincore's answer for every page of the file, on a private read-only mapping of our own: the
// page-cache state of a file we own or may write (the kernel's rule, mm/mincore.c). Empty with
// ok=false when the file cannot be opened or mapped.
std::vector<unsigned char> mincore_vector(const std::string& path, bool& ok) {
    ok = false;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        return {};
    }
    const auto bytes = static_cast<std::size_t>(st.st_size);
    std::vector<unsigned char> vec((bytes + static_cast<std::size_t>(page_size()) - 1) /
                                   static_cast<std::size_t>(page_size()));
    if (bytes == 0) {
        ::close(fd);
        ok = true;
        return vec;
    }
    void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return {};
    ok = ::mincore(map, bytes, vec.data()) == 0;
    ::munmap(map, bytes);
    return vec;
}

} // namespace

std::int64_t cached_pages(const std::string& path) {
    bool ok = false;
    const auto vec = mincore_vector(path, ok);
    if (!ok) return -1;
    std::int64_t count = 0;
    for (unsigned char v : vec)
        count += v & 1;
    return count;
}

std::set<std::int64_t> cached_page_set(const std::string& path) {
    bool ok = false;
    const auto vec = mincore_vector(path, ok);
    BOOST_REQUIRE_MESSAGE(ok, "mincore on a private mapping of " << path << ": "
                                                                 << std::strerror(errno));
    std::set<std::int64_t> pages;
    for (std::size_t i = 0; i < vec.size(); ++i)
        if (vec[i] & 1) pages.insert(static_cast<std::int64_t>(i));
    return pages;
}

// Writes the file back and drops it from the page cache: afterwards no page of it is cached.
void make_cold(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE_MESSAGE(fd >= 0, "open " << path << ": " << std::strerror(errno));
    BOOST_REQUIRE(::fdatasync(fd) == 0);
    std::int64_t cached = -1;
    for (int attempt = 0; attempt < 5 && cached != 0; ++attempt) {
        if (attempt) std::this_thread::sleep_for(20ms);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        cached = cached_pages(path);
    }
    ::close(fd);
    BOOST_REQUIRE_MESSAGE(cached == 0, path << ": " << cached << " pages cached after DONTNEED");
}

// Reads one byte of each page with POSIX_FADV_RANDOM: caches exactly those pages (no readahead).
void read_pages_randomly(const std::string& path, const std::set<std::int64_t>& pages) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    BOOST_REQUIRE(::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);
    char byte;
    for (std::int64_t page : pages)
        BOOST_REQUIRE(::pread(fd, &byte, 1, page * page_size()) == 1);
    ::close(fd);
}

void read_all(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0);
    std::vector<char> buffer(1 << 20);
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
}

// `count` distinct pages spread over [0, file_pages), first and last included.
std::set<std::int64_t> spread_pages(std::int64_t file_pages, int count) {
    std::set<std::int64_t> pages{0, file_pages - 1};
    for (std::int64_t i = 0; static_cast<int>(pages.size()) < count; ++i)
        pages.insert((i * 7919 + 13) % file_pages); // 7919 is prime: no repeats before file_pages
    return pages;
}

// Pages per bucket of `layout` for the given page numbers.
BucketCounts buckets_of(const BucketLayout& layout, const std::set<std::int64_t>& pages) {
    BucketCounts counts(static_cast<std::size_t>(layout.count), 0);
    for (std::int64_t page : pages)
        ++counts[static_cast<std::size_t>(page / layout.bucket_pages)];
    return counts;
}

std::int64_t sum(const BucketCounts& counts) {
    return std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
}

bool kernel_offers_cachestat() {
    static const bool offers = [] {
        const int fd = static_cast<int>(::syscall(SYS_memfd_create, "residency-test", 0));
        if (fd < 0) return false;
        struct {
            std::uint64_t off, len;
        } range{0, 0};
        std::uint64_t cs[5] = {};
        const bool works = ::ftruncate(fd, 4096) == 0 && ::syscall(451, fd, &range, cs, 0) == 0;
        ::close(fd);
        return works;
    }();
    return offers;
}

std::optional<std::int64_t> evicted_pages(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    struct {
        std::uint64_t off, len;
    } range{0, 0};                // the whole file
    std::uint64_t counts[5] = {}; // cache, dirty, writeback, evicted, recently evicted
    const bool ok = ::syscall(451, fd, &range, counts, 0) == 0;
    ::close(fd);
    if (!ok) return {};
    return static_cast<std::int64_t>(counts[3]);
}

bool kernel_offers_pagemap_scan() {
    // PAGEMAP_SCAN over one page of our own stack.
    static const bool offers = [] {
        std::uint64_t region[3] = {}; // start, end, categories
        PmScanArg arg{};
        const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return false;
        const auto page = static_cast<std::uint64_t>(page_size());
        arg.size = sizeof arg;
        arg.start = reinterpret_cast<std::uint64_t>(&arg) & ~(page - 1);
        arg.end = arg.start + page;
        arg.vec = reinterpret_cast<std::uint64_t>(region);
        arg.vec_len = 1;
        arg.category_mask = arg.return_mask = 1 << 3; // PAGE_IS_PRESENT
        const bool works = ::ioctl(fd, pagemap_scan_request, &arg) >= 0;
        ::close(fd);
        return works;
    }();
    return offers;
}

CacheMethod expected_cache_method(CacheMethod preferred) {
    if (preferred == CacheMethod::cachestat && kernel_offers_cachestat())
        return CacheMethod::cachestat;
    return CacheMethod::mincore;
}

std::string expected_pagemap_method(bool allow_scan) {
    return allow_scan && kernel_offers_pagemap_scan() ? "PAGEMAP_SCAN" : "pagemap";
}

bool refuse_in_this_process(int cachestat_errno, int pagemap_scan_errno) {
    constexpr std::uint32_t cachestat_nr = 451; // x86-64 and the generic table alike
    const auto answer = [](int error) {
        return error ? SECCOMP_RET_ERRNO | (static_cast<std::uint32_t>(error) & SECCOMP_RET_DATA)
                     : SECCOMP_RET_ALLOW;
    };
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, cachestat_nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, answer(cachestat_errno)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
        // The request is the low 32 bits of the second argument (little-endian).
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(pagemap_scan_request), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, answer(pagemap_scan_errno)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

int run_with_refusals(const std::vector<std::string>& argv, int cachestat_errno,
                      int pagemap_scan_errno, const std::string& output) {
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(122);
        if (!refuse_in_this_process(cachestat_errno, pagemap_scan_errno)) ::_exit(120);
        std::vector<char*> args;
        for (const auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execv(args[0], args.data());
        ::_exit(121);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

ProbeRead probe(const std::string& path, CacheMethod preferred, const BucketLayout& layout) {
    PageCacheProbe p(path, preferred);
    BOOST_REQUIRE_MESSAGE(p.method() == expected_cache_method(preferred),
                          path << ": asked for " << to_string(preferred) << ", got "
                               << to_string(p.method()) << " (" << p.problem() << "), expected "
                               << to_string(expected_cache_method(preferred)));
    ProbeRead out;
    out.method = p.method();
    auto counts = p.read(layout, out.cached, &out.evicted);
    BOOST_REQUIRE_MESSAGE(counts, p.problem());
    out.totals = *counts;
    return out;
}

std::string Methods::name() const {
    return std::string("cache ") + to_string(cache) + " (is " +
           to_string(expected_cache_method(cache)) + "), pagemap " +
           (pagemap_scan ? "scan allowed (is " : "entries forced (is ") +
           expected_pagemap_method(pagemap_scan) + ")";
}

ResidencyOptions Methods::options(ResidencyOptions base) const {
    base.cache_method = cache;
    base.allow_pagemap_scan = pagemap_scan;
    return base;
}

std::vector<Methods> all_methods() {
    return {{CacheMethod::cachestat, true},
            {CacheMethod::cachestat, false},
            {CacheMethod::mincore, true},
            {CacheMethod::mincore, false}};
}

} // namespace loaderlens::test::residency
