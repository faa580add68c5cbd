// SPDX-License-Identifier: MIT
// Helpers of the residency tests (test_residency*.cpp): set a file's page-cache state and read it
// without going through the code under test, and which methods this kernel offers, found out
// independently of the probes.
//
// The oracle of the page cache is mincore(2) on a private mapping of the test's own (fincore and
// vmtouch ask the same question from another program): never cachestat, one of the methods under
// test, and never the probe's own mapping.
#pragma once

#include "loaderlens/page_cache.hpp"
#include "loaderlens/residency.hpp"
#include "loaderlens/residency_sampler.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loaderlens::test::residency {

std::int64_t page_size();
// Cached pages of the file by mincore(2) on a private read-only mapping made for the call; -1 when
// it cannot be mapped.
std::int64_t cached_pages(const std::string& path);
// Which pages of the file are cached, by the same means.
std::set<std::int64_t> cached_page_set(const std::string& path);
// Writes the file back and drops it from the page cache (requires that no page stays cached).
void make_cold(const std::string& path);
// Reads one byte of each page with POSIX_FADV_RANDOM: caches exactly those pages.
void read_pages_randomly(const std::string& path, const std::set<std::int64_t>& pages);
void read_all(const std::string& path);
// Pages of `path` evicted from the page cache whose shadow entries remain: the test's own
// cachestat(2) call; empty where the kernel has none (before 6.5).
std::optional<std::int64_t> evicted_pages(const std::string& path);
// `count` distinct pages spread over [0, file_pages), first and last included.
std::set<std::int64_t> spread_pages(std::int64_t file_pages, int count);
// Pages per bucket of `layout` for the given page numbers.
BucketCounts buckets_of(const BucketLayout& layout, const std::set<std::int64_t>& pages);
std::int64_t sum(const BucketCounts& counts);

// What the kernel offers, asked directly (a syscall on a memfd, an ioctl on our own pagemap): the
// probes must pick the same, so their answer is checked against these, never against a name
// written in the test.
bool kernel_offers_cachestat();
bool kernel_offers_pagemap_scan();
// The method a probe asked for `preferred` must use on this kernel: cachestat only where the
// kernel offers it, mincore otherwise (and whenever mincore is asked for).
CacheMethod expected_cache_method(CacheMethod preferred);
// The pagemap reader a sampler allowed to use PAGEMAP_SCAN must report ("PAGEMAP_SCAN" or
// "pagemap").
std::string expected_pagemap_method(bool allow_scan);

// A seccomp filter, installed in the calling process (and inherited by what it forks and execs),
// that makes cachestat(2) fail with `cachestat_errno` and the PAGEMAP_SCAN ioctl with
// `pagemap_scan_errno` (0: allowed): what a kernel without them gives (ENOSYS, ENOTTY: Linux 6.1)
// or a container's profile (EPERM). False if it could not be installed. x86-64.
bool refuse_in_this_process(int cachestat_errno, int pagemap_scan_errno);
// Runs `argv` (execv) in a child under that filter, stdout and stderr to `output` (a file);
// returns the exit code (128 + signal if killed).
int run_with_refusals(const std::vector<std::string>& argv, int cachestat_errno,
                      int pagemap_scan_errno, const std::string& output);

// One read of a PageCacheProbe asked for `preferred`, which must have used
// expected_cache_method(preferred).
struct ProbeRead {
    CacheMethod method = CacheMethod::unavailable;
    CacheCounts totals;
    BucketCounts cached, evicted;
};
ProbeRead probe(const std::string& path, CacheMethod preferred, const BucketLayout& layout);

// Every way the residency tier can read the kernel, each forced: both page-cache methods (a
// preference for cachestat gives mincore on a kernel without it) and both pagemap readers.
struct Methods {
    CacheMethod cache;
    bool pagemap_scan;
    std::string name() const;
    ResidencyOptions options(ResidencyOptions base = {}) const;
};
std::vector<Methods> all_methods();

} // namespace loaderlens::test::residency
