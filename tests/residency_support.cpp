// Helpers of the residency tests: page-cache states set and read without the code under test.
#include "residency_support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <numeric>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;

namespace loaderlens::test::residency {

std::int64_t page_size() {
    static const std::int64_t size = ::sysconf(_SC_PAGESIZE);
    return size;
}

// cachestat(2) over the whole file, called directly: the tests' own preconditions do not go
// through the code under test. -1 when it fails.
std::int64_t cached_pages(const std::string& path) {
    struct {
        std::uint64_t off, len;
    } range{0, 0};
    struct {
        std::uint64_t cache, dirty, writeback, evicted, recently_evicted;
    } cs{};
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const long rc = fd < 0 ? -1 : ::syscall(451, fd, &range, &cs, 0);
    if (fd >= 0) ::close(fd);
    return rc == 0 ? static_cast<std::int64_t>(cs.cache) : -1;
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

} // namespace loaderlens::test::residency
