// SPDX-License-Identifier: MIT
// What the residency probes do when the kernel will not answer as asked: an unprivileged user
// gets "unavailable" (never a count), a small memory cgroup evicts (cachestat's evicted counts),
// and a refused PAGEMAP_SCAN falls back to the 8-byte pagemap entries with the same figures (as on
// kernels before 6.7, or under a seccomp profile), checked against the pages the test touched.
#include "cgroup_support.hpp"
#include "loaderlens/page_cache.hpp"
#include "loaderlens/pagemap.hpp"
#include "loaderlens/residency_sampler.hpp"
#include "precondition.hpp"
#include "residency_support.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <grp.h>
#include <map>
#include <poll.h>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;
namespace fs = std::filesystem;
namespace tt = boost::test_tools;
using namespace std::chrono_literals;

namespace {

using Put = std::function<void(const std::string& key, const std::string& value)>;

// Reads a forked child's report (key=value lines) until it closes the pipe, and reaps it.
std::map<std::string, std::string> collect_report(pid_t pid, int fd) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, 100);
        if (ready < 0) break;
        if (ready == 0) continue;
        char buffer[4096];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) break; // EOF: the child is done
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    std::map<std::string, std::string> report;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (auto eq = line.find('='); eq != std::string::npos)
            report[line.substr(0, eq)] = line.substr(eq + 1);
    return report;
}

// Runs `body` in a forked copy of the test process (where it may drop privileges or install a
// seccomp filter without touching the test) and returns what it put, as key=value.
std::map<std::string, std::string> report_from_child(const std::function<void(const Put&)>& body) {
    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        std::string out;
        body([&](const std::string& key, const std::string& value) {
            out += key + "=" + value + "\n";
        });
        const ssize_t ignored = ::write(fds[1], out.data(), out.size());
        (void)ignored;
        ::_exit(0);
    }
    ::close(fds[1]);
    return collect_report(pid, fds[0]);
}

std::string join(const BucketCounts& counts) {
    std::string out;
    for (std::int32_t n : counts)
        out += (out.empty() ? "" : ",") + std::to_string(n);
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(residency)

BOOST_AUTO_TEST_CASE(unprivileged_user_gets_unavailable_never_a_count, *LOADERLENS_MAY_SKIP) {
    if (!precondition(::geteuid() == 0, "needs root to become nobody", InCi::must_have)) return;
    TempDir dir;
    fs::permissions(dir.path(), fs::perms(0755)); // nobody may look up the files
    const std::string readable = dir.file("readable.bin"), secret = dir.file("secret.bin");
    const std::int64_t pages = 1024;
    make_file(readable, static_cast<std::size_t>(pages * page_size()));
    make_file(secret, 4096);
    fs::permissions(readable, fs::perms(0644));
    fs::permissions(secret, fs::perms(0600));
    make_cold(readable);
    const BucketLayout layout = BucketLayout::make(pages, 8);
    // A page that is present in the test process (and, after the fork, at the same address).
    const auto own_page = reinterpret_cast<std::uint64_t>(&layout) & ~std::uint64_t{4095};
    const pid_t test_pid = ::getpid();

    auto report = report_from_child([&](const Put& put) {
        if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
            put("uid", std::string("setuid failed: ") + std::strerror(errno));
        } else {
            put("uid", std::to_string(::geteuid()));
            const int readable_fd = ::open(readable.c_str(), O_RDONLY);
            put("readable.open", readable_fd >= 0 ? "ok" : std::strerror(errno));
            for (CacheMethod method : {CacheMethod::cachestat, CacheMethod::mincore}) {
                PageCacheProbe p(readable, method);
                BucketCounts cached;
                auto counts = p.read(layout, cached);
                const std::string name = std::string("readable.") + to_string(method);
                put(name + ".method", to_string(p.method()));
                put(name + ".problem", p.problem());
                put(name + ".count", counts ? std::to_string(counts->cached) : "none");
            }
            PageCacheProbe p(secret);
            put("secret.method", to_string(p.method()));
            put("secret.problem", p.problem());
            // The kernel's rule that the probe relies on: EPERM from cachestat, and a mincore
            // that calls every page resident.
            const int fd = readable_fd;
            struct {
                std::uint64_t off, len;
            } range{0, 0};
            std::uint64_t cs[5] = {};
            put("kernel.cachestat",
                ::syscall(451, fd, &range, cs, 0) == 0 ? "ok" : std::strerror(errno));
            const auto bytes = static_cast<std::size_t>(pages * page_size());
            void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
            std::vector<unsigned char> vec(static_cast<std::size_t>(pages));
            if (map != MAP_FAILED && ::mincore(map, bytes, vec.data()) == 0)
                put("kernel.mincore",
                    std::to_string(std::count_if(vec.begin(), vec.end(),
                                                 [](unsigned char v) { return v & 1; })));
            PagemapReader reader(test_pid);
            int runs = 0;
            const bool ok = reader.for_each_present(own_page, own_page + 4096,
                                                    [&](std::uint64_t, std::uint64_t) { ++runs; });
            put("pagemap.error", std::to_string(reader.error()));
            put("pagemap.ok", ok ? "true" : "false");
            put("pagemap.runs", std::to_string(runs));
        }
    });
    BOOST_REQUIRE_EQUAL(report["uid"], "65534");
    // e.g. a $TMPDIR below a directory nobody cannot enter
    if (!precondition(report["readable.open"] == "ok",
                      "nobody cannot open " + readable + ": " + report["readable.open"],
                      InCi::may_lack))
        return;
    for (const char* method : {"cachestat", "mincore"}) {
        BOOST_TEST_CONTEXT("preferred " << method) {
            const std::string name = std::string("readable.") + method;
            BOOST_TEST(report[name + ".method"] == "unavailable");
            BOOST_TEST(report[name + ".count"] == "none");
            BOOST_TEST(report[name + ".problem"].find("only to its owner") != std::string::npos,
                       "problem: '" << report[name + ".problem"] << "'");
        }
    }
    BOOST_TEST(report["secret.method"] == "unavailable");
    BOOST_TEST(report["secret.problem"] == "cannot open " + secret + ": Permission denied");
    // What a naive reading would have said: 100% cached, while the file is cold.
    // (A kernel without cachestat: ENOSYS, whoever asks.)
    BOOST_TEST(report["kernel.cachestat"] ==
               std::strerror(kernel_offers_cachestat() ? EPERM : ENOSYS));
    BOOST_TEST(report["kernel.mincore"] == std::to_string(pages));
    BOOST_TEST(cached_pages(readable) == 0);
    BOOST_TEST(report["pagemap.error"] != "0");
    BOOST_TEST(report["pagemap.ok"] == "false");
    BOOST_TEST(report["pagemap.runs"] == "0");
    BOOST_TEST_MESSAGE("as nobody: " << report["readable.cachestat.problem"] << "; pagemap errno "
                                     << report["pagemap.error"] << "; the kernel's mincore said "
                                     << report["kernel.mincore"] << "/" << pages << " resident");
}

BOOST_AUTO_TEST_CASE(evictions_under_a_small_memory_cgroup, *LOADERLENS_MAY_SKIP) {
    if (!precondition(::geteuid() == 0, "needs root to make a memory cgroup", InCi::must_have) ||
        !precondition(kernel_offers_cachestat(),
                      "evictions are counted by cachestat(2), which this kernel does not offer "
                      "(Linux >= 6.5)",
                      InCi::may_lack))
        return;
    std::string why_v1, why_v2;
    auto hierarchy = cgroups::memory_v1(why_v1);
    if (!hierarchy) hierarchy = cgroups::memory_v2(why_v2);
    if (!precondition(hierarchy.has_value(), why_v1 + "; " + why_v2, InCi::may_lack)) return;
    cgroups::TestCgroup group(hierarchy->version, hierarchy->base,
                              "loaderlens-residency-" + std::to_string(::getpid()));
    BOOST_REQUIRE_MESSAGE(group.problem().empty(), group.problem());
    const std::int64_t limit_bytes = 32 << 20;
    BOOST_REQUIRE_MESSAGE(group.set_limit(limit_bytes), group.problem());

    TempDir dir;
    const std::string path = dir.file("big.bin");
    const std::int64_t pages = (128 << 20) / page_size();
    make_file(path, static_cast<std::size_t>(pages * page_size()));
    make_cold(path);

    int go[2];
    BOOST_REQUIRE(::pipe2(go, O_CLOEXEC) == 0);
    std::vector<char> buffer(1 << 20);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) { // reads the file twice once it is in the cgroup
        char byte;
        if (::read(go[0], &byte, 1) != 1) ::_exit(2);
        for (int pass = 0; pass < 2; ++pass) {
            const int fd = ::open(path.c_str(), O_RDONLY);
            while (::read(fd, buffer.data(), buffer.size()) > 0) {
            }
            ::close(fd);
        }
        ::_exit(0);
    }
    ForkGuard member(pid);
    ::close(go[0]);
    const auto start = std::chrono::steady_clock::now();
    const bool joined = group.add(pid);
    BOOST_REQUIRE(::write(go[1], "g", 1) == 1);
    ::close(go[1]);
    BOOST_REQUIRE_MESSAGE(joined, group.problem());
    int status = -1;
    while (::waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() - start < 40s)
        std::this_thread::sleep_for(20ms);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                          "reader: status " << status << " after " << seconds << " s");

    const BucketLayout layout = BucketLayout::make(pages, 64);
    const ProbeRead r = probe(path, CacheMethod::cachestat, layout);
    const ProbeRead m = probe(path, CacheMethod::mincore, layout);
    const std::set<std::int64_t> oracle = cached_page_set(path);
    const auto nonzero =
        std::count_if(r.evicted.begin(), r.evicted.end(), [](std::int32_t n) { return n > 0; });
    BOOST_TEST_MESSAGE("after two reads of "
                       << pages << " pages in " << limit_bytes / page_size() << " pages of cgroup "
                       << hierarchy->version << " (" << seconds << " s): cached " << r.totals.cached
                       << " (mincore " << m.totals.cached << ", private mincore " << oracle.size()
                       << "), evicted " << *r.totals.evicted << " in " << nonzero << "/"
                       << layout.count << " buckets, recently evicted "
                       << *r.totals.recently_evicted);
    BOOST_TEST(*r.totals.evicted > 0);
    BOOST_TEST(nonzero > 0);
    BOOST_TEST(sum(r.evicted) == *r.totals.evicted);
    BOOST_TEST(sum(r.cached) == r.totals.cached);
    // Nothing reads the file any more: both methods see what the test's own mapping sees.
    BOOST_TEST(r.cached == buckets_of(layout, oracle), tt::per_element());
    BOOST_TEST(m.cached == buckets_of(layout, oracle), tt::per_element());
    // A page's slot in the page cache holds the page, or the shadow of its eviction, or nothing.
    int full = 0;
    for (int b = 0; b < layout.count; ++b) {
        const auto i = static_cast<std::size_t>(b);
        BOOST_TEST(r.cached[i] + r.evicted[i] <= layout.pages_in(b),
                   "bucket " << b << ": " << r.cached[i] << " cached + " << r.evicted[i]
                             << " evicted > " << layout.pages_in(b) << " pages");
        full += r.cached[i] + r.evicted[i] == layout.pages_in(b);
    }
    BOOST_TEST_MESSAGE(full << " buckets with every page cached or evicted");
    // The pages still cached are charged to the cgroup, whose limit is a hard one.
    BOOST_TEST(r.totals.cached <= limit_bytes / page_size());
}

// A forked child refuses itself PAGEMAP_SCAN (seccomp), maps a cold file with MADV_RANDOM, touches
// known pages and samples itself: the reader must fall back to the 8-byte entries, say so, and
// count exactly the touched pages. Refused with ENOTTY (a kernel before 6.7: the pagemap file has
// no ioctl), EPERM (a container's seccomp profile) and EINVAL; and not refused (the control).
BOOST_AUTO_TEST_CASE(pagemap_scan_refused_falls_back_to_entries) {
    TempDir dir;
    const std::string path = dir.file("data.bin");
    const std::int64_t file_pages = 1024; // 4 MiB: 256 buckets of 4 pages
    make_file(path, static_cast<std::size_t>(file_pages * page_size()));
    const std::set<std::int64_t> touched{0, 5, 6, 100, 511, 512, 1023};
    for (int refusal : {ENOTTY, EPERM, EINVAL, 0}) {
        BOOST_TEST_CONTEXT("PAGEMAP_SCAN " << (refusal ? std::strerror(refusal) : "allowed")) {
            make_cold(path);
            auto report = report_from_child([&](const Put& put) {
                const auto bytes = static_cast<std::size_t>(file_pages * page_size());
                const int fd = ::open(path.c_str(), O_RDONLY);
                auto* base = static_cast<volatile char*>(
                    ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0));
                if (!refuse_in_this_process(0, refusal)) {
                    put("error", "seccomp");
                } else if (base == MAP_FAILED ||
                           ::madvise(const_cast<char*>(base), bytes, MADV_RANDOM) != 0) {
                    put("error", std::string("mmap: ") + std::strerror(errno));
                } else {
                    unsigned sum = 0;
                    for (std::int64_t p : touched)
                        sum += static_cast<unsigned char>(base[p * page_size()]);
                    put("sum", std::to_string(sum));
                    // The reader alone, then the sampler.
                    PagemapReader reader(::getpid());
                    std::int64_t present = 0;
                    const auto start = reinterpret_cast<std::uint64_t>(base);
                    const bool ok = reader.for_each_present(
                        start, start + bytes,
                        [&](std::uint64_t a, std::uint64_t b) {
                            present += static_cast<std::int64_t>((b - a) / page_size());
                        },
                        true);
                    put("reader.ok", ok ? "true" : "false");
                    put("reader.error", std::to_string(reader.error()));
                    put("reader.method", to_string(reader.method()));
                    put("reader.present", std::to_string(present));
                    ResidencySampler sampler(ResidencyOptions{.files = {}});
                    ProcessInfo self;
                    self.id = 1;
                    self.key.pid = ::getpid();
                    ResidencySample sample;
                    Problems problems;
                    sampler.sample({self}, sample, problems);
                    put("sampler.method", sampler.pagemap_method());
                    put("sampler.problems", std::to_string(problems.size()));
                    for (const ResidencyFile& f : sample.new_files)
                        if (f.path == path) put("sampler.file", std::to_string(f.id));
                    for (const MappedResidency& row : sample.mapped) {
                        put("sampler.present." + std::to_string(row.file_id),
                            std::to_string(row.present_pages));
                        put("sampler.buckets." + std::to_string(row.file_id), join(row.buckets));
                    }
                }
            });
            const std::string error = report.contains("error") ? report.at("error") : "";
            BOOST_REQUIRE_MESSAGE(error.empty(), error);
            const std::string expected = refusal ? "pagemap" : expected_pagemap_method(true);
            const auto n = std::to_string(touched.size());
            BOOST_TEST(report["reader.ok"] == "true");
            BOOST_TEST(report["reader.error"] == "0");
            BOOST_TEST(report["reader.method"] == expected);
            BOOST_TEST(report["reader.present"] == n);
            BOOST_TEST(report["sampler.method"] == expected);
            BOOST_TEST(report["sampler.problems"] == "0");
            const std::string id = report["sampler.file"];
            BOOST_REQUIRE_MESSAGE(!id.empty(), "the sampler did not follow " << path);
            BOOST_TEST(report["sampler.present." + id] == n);
            const BucketLayout layout = BucketLayout::make(file_pages, 256);
            BOOST_TEST(report["sampler.buckets." + id] == join(buckets_of(layout, touched)));
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
