// Helpers of the residency tests (test_residency*.cpp): set a file's page-cache state and read it
// without going through the code under test.
#pragma once

#include "loaderlens/residency.hpp"

#include <cstdint>
#include <set>
#include <string>

namespace loaderlens::test::residency {

std::int64_t page_size();
// cachestat(2) over the whole file, called directly; -1 when it fails.
std::int64_t cached_pages(const std::string& path);
// Writes the file back and drops it from the page cache (requires that no page stays cached).
void make_cold(const std::string& path);
// Reads one byte of each page with POSIX_FADV_RANDOM: caches exactly those pages.
void read_pages_randomly(const std::string& path, const std::set<std::int64_t>& pages);
void read_all(const std::string& path);
// `count` distinct pages spread over [0, file_pages), first and last included.
std::set<std::int64_t> spread_pages(std::int64_t file_pages, int count);
// Pages per bucket of `layout` for the given page numbers.
BucketCounts buckets_of(const BucketLayout& layout, const std::set<std::int64_t>& pages);
std::int64_t sum(const BucketCounts& counts);

} // namespace loaderlens::test::residency
