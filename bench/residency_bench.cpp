// SPDX-License-Identifier: MIT
// What one residency sample costs, against what a user runs today, in the same run:
// 1. A 1 GiB file cached by a sequential read (readahead's large folios), kept cached by a worker
//    that maps it, checked >= 99% cached before and after each section. PageCacheProbe::read with
//    cachestat (256 buckets, the recorder's default; 1 bucket) and with mincore (mapping kept, as
//    in the recorder; and a new probe: open + mmap), wall time per call, median. Baselines: the
//    `fincore FILE` and `vmtouch FILE` commands (spawn to exit), vmtouch's own "Elapsed" (open +
//    mmap + mincore, no process start) and `/bin/true` (process start alone). Targets: the
//    steady-state cachestat sample (the same probe again, the cache unchanged since its last
//    sample: what the recorder does every second on a warm dataset) >= 100x cheaper than
//    `fincore` (issue 12) and >= 30x than `vmtouch`; the kept-mapping mincore sample <= 1.1x
//    vmtouch's Elapsed (like for like; the ratio to the command is printed too). A first sample of
//    a new probe (every bucket read) is printed for comparison.
// 2. Per worker mapping the file MAP_SHARED read-only (every page present; every page without
//    PMD mappings; 1 page in 16): PagemapReader with PAGEMAP_SCAN and with 8-byte entries, a
//    PAGEMAP_SCAN as asked for shared mappings (present only), and a whole
//    ResidencySampler::sample, per GiB mapped.
// 3. cachestat's cost follows the folio count: a 256 MiB file cached by a sequential read and by
//    4 KiB preads under POSIX_FADV_RANDOM (one folio per page).
// 4. A 1 GiB file cached by its writer (one folio per page): a ResidencySampler::sample in the
//    steady state, in rotation (the default) and exact, against `fincore` in the same rounds;
//    target: rotation >= 30x cheaper than the command, on the mean of all samples (issue 31).
// Prints MISSED for a missed target and exits 3; exits 1 when a measurement could not be made (a
// command failed, the file would not stay cached, the readers disagree).
#include "loaderlens/page_cache.hpp"
#include "loaderlens/pagemap.hpp"
#include "loaderlens/proc_text.hpp"
#include "loaderlens/residency_sampler.hpp"
#include "rounds.hpp"
#include "targets.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <optional>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace loaderlens;
using namespace loaderlens::bench;

struct Options {
    std::size_t file_mib = 1024, small_mib = 256;
    int rounds = 31, sample_reps = 20; // rounds of all measures; cachestat samples per round
    int section = 0;                   // 0: all; else only that one
    double target_steady = 100, target_faster = 30, target_mincore = 1.1;
};

const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
constexpr double gib = 1024.0 * 1024 * 1024;

// Median (min .. max); `scale` turns the times into times per GiB.
void print_stats(const char* what, const Stats& s, const char* note = "", double scale = 1) {
    std::printf("  %-46s %11s  (%s .. %s, n=%zu) %s\n", what, text_of(s.median() * scale).c_str(),
                text_of(s.min() * scale).c_str(), text_of(s.max() * scale).c_str(), s.us.size(),
                note);
}

struct Tally {
    int met = 0, missed = 0;
};

// One ratio line, judged on the paired ratio; the ratio of the overall medians is printed too.
// `target` > 0: ">= target", < 0: "<= -target", 0: info only.
void print_ratio(const char* what, const Stats& num, const Stats& den, int rounds, double target,
                 Tally& tally) {
    const double r = paired_ratio(num, den, rounds);
    char t[16] = "-";
    const char* result = "info";
    if (target != 0) {
        const bool ok = target > 0 ? r >= target : r <= -target;
        std::snprintf(t, sizeof t, "%s%.1f", target > 0 ? ">=" : "<=", std::abs(target));
        result = ok ? "PASS" : "MISSED";
        (ok ? tally.met : tally.missed)++;
    }
    std::printf("  %-58s %8.2fx %8.2fx %7s %s\n", what, r, num.median() / den.median(), t, result);
}

// Page-cache share of a file from cachestat (1 bucket), in percent.
double cached_percent(const std::string& path) {
    PageCacheProbe probe(path);
    const auto layout =
        BucketLayout::make((probe.size_bytes() + static_cast<std::int64_t>(page) - 1) /
                               static_cast<std::int64_t>(page),
                           1);
    BucketCounts counts;
    const auto totals = probe.read(layout, counts);
    if (!totals || probe.method() != CacheMethod::cachestat)
        throw SetupError("cachestat of " + path + " failed: " + probe.problem());
    return 100.0 * static_cast<double>(totals->cached) / static_cast<double>(layout.file_pages);
}

// Reads the whole file through `fd` in `chunk` pieces (pread: the cached pages stay as they are).
void read_all(int fd, std::size_t bytes, std::size_t chunk) {
    std::vector<char> buffer(chunk);
    for (std::size_t off = 0; off < bytes; off += chunk)
        if (pread(fd, buffer.data(), std::min(chunk, bytes - off), static_cast<off_t>(off)) <= 0)
            throw SetupError(std::string("read failed: ") + std::strerror(errno));
}

// Makes the file cached and checks it: >= 99% or SetupError. Reads it when needed: sequentially
// in 1 MiB pieces, or `random`: page by page under POSIX_FADV_RANDOM (no readahead, so each page
// read in is a folio of its own). Read again when the cache lost pages meanwhile.
double ensure_cached(const std::string& path, std::size_t bytes, bool random = false) {
    for (int attempt = 0; attempt < 3; ++attempt) {
        const double percent = cached_percent(path);
        if (percent >= 99) return percent;
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw SetupError("cannot open " + path);
        if (random) posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        read_all(fd, bytes, random ? page : mib);
        close(fd);
    }
    throw SetupError(path + " does not stay >= 99% cached");
}

void expect_cached(const std::string& path, const char* when) {
    const double percent = cached_percent(path);
    std::printf("  (file %.1f%% cached %s)\n", percent, when);
    if (percent < 99) throw SetupError(std::string("the file fell out of the cache ") + when);
}

// Drops the file's (unmapped) pages from the cache; checks that they went.
void drop_cache(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
        throw SetupError("cannot drop the cache of " + path);
    close(fd);
    if (cached_percent(path) > 1) throw SetupError(path + " stays cached (is it mapped?)");
}

// Folios holding the file's pages: pages that are not the tail of a compound page, from the PFNs
// of a mapping of our own and /proc/kpageflags. Needs root (PFNs read as 0 otherwise): nullopt.
std::optional<std::int64_t> count_folios(const std::string& path, std::size_t bytes) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    const int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    const int kf = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
    void* map = fd < 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    std::optional<std::int64_t> folios;
    if (map != MAP_FAILED && pm >= 0 && kf >= 0) {
        madvise(map, bytes, MADV_RANDOM); // a page not cached must not bring in a large folio
        const auto* p = static_cast<const volatile char*>(map);
        const auto first = reinterpret_cast<std::uintptr_t>(map) / page;
        std::vector<std::uint64_t> entries(bytes / page);
        for (std::size_t i = 0; i < entries.size(); ++i)
            (void)p[i * page];
        folios = 0;
        if (pread(pm, entries.data(), entries.size() * 8, static_cast<off_t>(first * 8)) !=
            static_cast<ssize_t>(entries.size() * 8))
            folios.reset();
        for (std::size_t i = 0; folios && i < entries.size(); ++i) {
            const std::uint64_t pfn = entries[i] & ((1ULL << 55) - 1);
            std::uint64_t flags = 0;
            if (!(entries[i] >> 63) || pfn == 0 ||
                pread(kf, &flags, 8, static_cast<off_t>(pfn * 8)) != 8)
                folios.reset();
            else if (!(flags & (1ULL << 16))) // KPF_COMPOUND_TAIL
                ++*folios;
        }
    }
    if (map != MAP_FAILED) munmap(map, bytes);
    for (int f : {fd, pm, kf})
        if (f >= 0) close(f);
    return folios;
}

std::string folio_text(std::optional<std::int64_t> folios, std::size_t bytes) {
    char t[64] = "folios n/a (needs root)";
    if (folios && *folios > 0)
        std::snprintf(t, sizeof t, "%lld folios, %.0f KiB each on average",
                      static_cast<long long>(*folios),
                      static_cast<double>(bytes) / 1024 / static_cast<double>(*folios));
    return t;
}

// fincore's PAGES column (second field of its second line).
long long fincore_pages(const std::string& out) {
    long long pages = -1;
    std::sscanf(out.c_str(), "%*[^\n] %*s %lld", &pages);
    return pages;
}

// The command `name FILE` (fincore or vmtouch) as a user runs it. Checks that it sees all `pages`
// cached; keeps vmtouch's own "Elapsed" in `elapsed`.
Measure command(const char* name, const std::string& file, long long pages,
                Stats* elapsed = nullptr) {
    return [=](Stats& stats) {
        const CommandRun run = run_command({name, file});
        const bool vmtouch = std::string_view(name) == "vmtouch";
        if ((vmtouch ? static_cast<long long>(number_after(run.out, "Resident Pages:", name))
                     : fincore_pages(run.out)) != pages)
            throw SetupError(std::string(name) + " does not see it all cached:\n" + run.out);
        stats.us.push_back(run.us);
        if (elapsed) elapsed->us.push_back(number_after(run.out, "Elapsed:", name) * 1e6);
    };
}

// A worker: a child that maps `file` MAP_SHARED read-only and touches every page, then keeps only
// one page in `stride` present (MADV_DONTNEED on the rest: touching one page in 16 would not do,
// fault-around maps the neighbours too). `no_thp` refuses PMD mappings (MADV_NOHUGEPAGE). It
// dies with the bench; while it lives its mapping keeps the file's pages in the cache.
class Worker {
  public:
    Worker(const std::string& file, std::size_t bytes, int stride, bool no_thp) : bytes_(bytes) {
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) != 0) throw SetupError("pipe failed");
        const pid_t bench = getpid();
        pid_ = fork();
        if (pid_ < 0) throw SetupError("fork failed");
        if (pid_ == 0) {
            close(ready[0]);
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != bench) _exit(1);
            const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
            void* map = fd < 0 ? MAP_FAILED : mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
            if (map == MAP_FAILED) _exit(1);
            if (no_thp) madvise(map, bytes, MADV_NOHUGEPAGE);
            const auto* p = static_cast<const volatile char*>(map);
            for (std::size_t off = 0; off < bytes; off += page)
                (void)p[off];
            const std::size_t group = static_cast<std::size_t>(stride) * page;
            for (std::size_t off = 0; stride > 1 && off + page < bytes; off += group)
                madvise(static_cast<char*>(map) + off + page, std::min(group, bytes - off) - page,
                        MADV_DONTNEED);
            const auto address = reinterpret_cast<std::uint64_t>(map);
            if (write(ready[1], &address, sizeof address) != sizeof address) _exit(1);
            for (;;)
                pause();
        }
        guard_process(pid_);
        close(ready[1]);
        pollfd pfd{ready[0], POLLIN, 0};
        const bool ok =
            poll(&pfd, 1, 180'000) == 1 && read(ready[0], &start_, sizeof start_) == sizeof start_;
        close(ready[0]);
        if (!ok) {
            stop();
            throw SetupError("a worker could not map " + file);
        }
        info_.id = 1;
        info_.key = {pid_, read_proc_stat(pid_).start_ticks};
    }
    ~Worker() { stop(); }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    pid_t pid() const { return pid_; }
    std::uint64_t start() const { return start_; }
    std::uint64_t end() const { return start_ + bytes_; }
    const ProcessInfo& info() const { return info_; }

    // FilePmdMapped of the worker, in KiB: how much of the file its page tables map as 2 MiB.
    double pmd_mapped_kib() const {
        const auto text = read_text_file("/proc/" + std::to_string(pid_) + "/smaps_rollup");
        return number_after(text.value_or(""), "FilePmdMapped:", "smaps_rollup");
    }

  private:
    void stop() {
        if (pid_ <= 0) return;
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        unguard_process(pid_);
        pid_ = -1;
    }
    pid_t pid_ = -1;
    std::size_t bytes_;
    std::uint64_t start_ = 0;
    ProcessInfo info_;
};

// Section 1: the page cache of the big file, in-process probes and the commands.
void page_cache_section(const Options& o, const std::string& file, std::size_t bytes,
                        Tally& tally) {
    const auto pages = static_cast<long long>(bytes / page);
    std::printf("\n== page cache of a %zu MiB cached file: one sample (wall time, median) ==\n",
                o.file_mib);
    std::printf("  (file %.1f%% cached before)\n", ensure_cached(file, bytes));
    PageCacheProbe probe(file), kept(file, CacheMethod::mincore);
    if (probe.method() != CacheMethod::cachestat || kept.method() != CacheMethod::mincore)
        throw SetupError("no cachestat or mincore: " + probe.problem() + kept.problem());
    const auto many = BucketLayout::make(pages, 256), one = BucketLayout::make(pages, 1);
    BucketCounts cached, evicted;
    auto sample = [&](PageCacheProbe& p, const BucketLayout& layout) {
        const auto totals = p.read(layout, cached, &evicted);
        return totals && totals->cached >= pages * 99 / 100;
    };
    // vmtouch's loop in this process, on a mapping of our own: one mincore over the whole file,
    // then a count of the resident bytes. What the kernel costs here, without the core's buckets.
    const int raw_fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    void* raw_map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, raw_fd, 0);
    if (raw_fd < 0 || raw_map == MAP_FAILED) throw SetupError("cannot map " + file);
    std::vector<unsigned char> vec(bytes / page);
    auto raw_mincore = [&] {
        if (mincore(raw_map, bytes, vec.data()) != 0) return false;
        long long resident = 0;
        for (unsigned char v : vec)
            resident += v & 1;
        return resident == pages;
    };
    Stats vmtouch_elapsed;
    // Each round: every command and mincore once, `sample_reps` samples of each cachestat.
    const auto st = interleaved(
        {[](Stats& stats) { stats.us.push_back(run_command({"/bin/true"}).us); },
         command("fincore", file, pages), command("vmtouch", file, pages, &vmtouch_elapsed),
         timed([&] { return sample(kept, many); }),
         timed([&] { // as vmtouch does: open, map, mincore, unmap, close
             PageCacheProbe fresh(file, CacheMethod::mincore);
             return sample(fresh, many);
         }),
         timed([&] { return sample(probe, many); }, o.sample_reps),
         timed([&] { return sample(probe, one); }, o.sample_reps), timed(raw_mincore),
         timed([&] { // a new probe's first sample: no counts kept from an earlier one
             PageCacheProbe fresh(file);
             return sample(fresh, many);
         })},
        o.rounds);
    munmap(raw_map, bytes);
    close(raw_fd);
    vmtouch_elapsed.us.erase(vmtouch_elapsed.us.begin()); // the untimed round's
    const Stats &true_cmd = st[0], &fincore_cmd = st[1], &vmtouch_cmd = st[2];
    const Stats &mincore_kept = st[3], &mincore_first = st[4], &stat256 = st[5], &stat1 = st[6];
    const Stats &mincore_raw = st[7], &stat_first = st[8];
    expect_cached(file, "after");

    print_stats("cachestat, 256 buckets, steady state", stat256, "(same probe, cache unchanged)");
    std::printf("  %-46s %11s  (every sample of the same probe, %zu)\n",
                "cachestat, 256 buckets, steady state, mean", text_of(stat256.mean()).c_str(),
                stat256.us.size());
    print_stats("cachestat, 256 buckets, new probe's first", stat_first, "(+open)");
    print_stats("PageCacheProbe cachestat, 1 bucket", stat1);
    print_stats("PageCacheProbe mincore, mapping kept", mincore_kept, "(256 buckets)");
    print_stats("PageCacheProbe mincore, new probe (+open, mmap)", mincore_first);
    print_stats("raw mincore + count, as vmtouch (this process)", mincore_raw);
    print_stats("`fincore FILE` command (spawn to exit)", fincore_cmd);
    print_stats("`vmtouch FILE` command (spawn to exit)", vmtouch_cmd);
    print_stats("vmtouch's own Elapsed (no process start)", vmtouch_elapsed);
    print_stats("`/bin/true` command (process start)", true_cmd);

    std::printf("\n  %-58s %9s %9s %7s %s\n", "ratio", "paired", "medians", "target", "result");
    print_ratio("fincore command / cachestat 256 buckets, steady state", fincore_cmd, stat256,
                o.rounds, 0, tally);
    // Judged on the mean: a probe may re-read every bucket now and then (PageCacheProbe reads them
    // all every 30th sample), which a median hides and the recorder pays.
    const double amortized = fincore_cmd.median() / stat256.mean();
    const bool steady_ok = amortized >= o.target_steady;
    (steady_ok ? tally.met : tally.missed)++;
    std::printf("  %-58s %9s %8.2fx %7s %s\n",
                "fincore command / steady-state sample, mean of all samples", "-", amortized,
                (">=" + std::to_string(static_cast<int>(o.target_steady))).c_str(),
                steady_ok ? "PASS" : "MISSED");
    print_ratio("vmtouch command / cachestat 256 buckets, steady state", vmtouch_cmd, stat256,
                o.rounds, o.target_faster, tally);
    print_ratio("vmtouch's Elapsed / cachestat 256 buckets", vmtouch_elapsed, stat256, o.rounds, 0,
                tally);
    print_ratio("fincore command / cachestat 256 buckets, new probe's first", fincore_cmd,
                stat_first, o.rounds, 0, tally);
    print_ratio("fincore command / cachestat 1 bucket", fincore_cmd, stat1, o.rounds, 0, tally);
    print_ratio("mincore sample (mapping kept) / vmtouch's Elapsed", mincore_kept, vmtouch_elapsed,
                o.rounds, -o.target_mincore, tally);
    print_ratio("mincore, new probe (+open, mmap) / vmtouch's Elapsed", mincore_first,
                vmtouch_elapsed, o.rounds, 0, tally);
    print_ratio("mincore sample (mapping kept) / vmtouch command", mincore_kept, vmtouch_cmd,
                o.rounds, 0, tally);
    print_ratio("mincore sample (mapping kept) / raw mincore + count", mincore_kept, mincore_raw,
                o.rounds, 0, tally);
    print_ratio("raw mincore + count / vmtouch's Elapsed", mincore_raw, vmtouch_elapsed, o.rounds,
                0, tally);
}

// Section 2: pagemap of one worker, both readers, and a whole residency sample of it.
void pagemap_section(const Options& o, const std::string& file, std::size_t bytes,
                     const Worker& dense, Tally& tally) {
    std::printf("\n== pagemap of one worker mapping the %zu MiB file (MAP_SHARED, read-only): "
                "wall time per GiB mapped, median ==\n",
                o.file_mib);
    std::printf("  (file %.1f%% cached before)\n", ensure_cached(file, bytes));
    // Sparse without huge pages: zapping part of a PMD-mapped range unmaps all of it.
    const Worker no_thp(file, bytes, 1, true), sparse(file, bytes, 16, true);
    struct Case {
        const char* name;
        const Worker& worker;
        long long expect_pages;
    };
    const long long pages = static_cast<long long>(bytes / page);
    const Case cases[] = {{"every page present", dense, pages},
                          {"every page present, MADV_NOHUGEPAGE", no_thp, pages},
                          {"1 page in 16 present (MADV_NOHUGEPAGE)", sparse, pages / 16}};
    for (const Case& c : cases) {
        PagemapReader scan(c.worker.pid(), true), shared_scan(c.worker.pid(), true),
            entries(c.worker.pid(), false);
        auto check = [&](bool ok, long long count, const char* how) {
            if (ok && count == c.expect_pages) return true;
            throw SetupError(std::string(c.name) + ": " + how + " found " + std::to_string(count) +
                             " present pages, expected " + std::to_string(c.expect_pages));
        };
        // shared_mapping: what the sampler asks for a MAP_SHARED mapping (present pages only);
        // false: present file pages, as for a private mapping.
        auto walk = [&](PagemapReader& reader, bool shared_mapping) {
            long long count = 0;
            const bool ok = reader.for_each_present(
                c.worker.start(), c.worker.end(),
                [&](std::uint64_t first, std::uint64_t last) {
                    count += static_cast<long long>((last - first) / page);
                },
                shared_mapping);
            return check(ok, count, to_string(reader.method()));
        };
        ResidencySampler sampler(ResidencyOptions{});
        auto whole = [&] {
            ResidencySample out;
            Problems problems;
            sampler.sample({c.worker.info()}, out, problems);
            for (const auto& m : out.mapped)
                if (m.present_pages == c.expect_pages && !out.cache.empty()) return true;
            return check(false, out.mapped.empty() ? -1 : out.mapped[0].present_pages,
                         "ResidencySampler");
        };
        const auto s = interleaved({timed([&] { return walk(scan, false); }),
                                    timed([&] { return walk(entries, false); }),
                                    timed([&] { return walk(shared_scan, true); }), timed(whole)},
                                   o.rounds);
        if (scan.method() != PagemapMethod::scan_ioctl)
            throw SetupError("PAGEMAP_SCAN is not available on this kernel");
        std::printf("  %s: %lld pages present, %.0f MiB of the mapping PMD-mapped\n", c.name,
                    c.expect_pages, c.worker.pmd_mapped_kib() / 1024);
        const double per_gib = gib / static_cast<double>(bytes);
        print_stats("  PagemapReader, PAGEMAP_SCAN present+file (private maps)", s[0], "", per_gib);
        print_stats("  PagemapReader, 8-byte entries", s[1], "", per_gib);
        print_stats("  PagemapReader, PAGEMAP_SCAN present (shared maps)", s[2], "", per_gib);
        print_stats("  ResidencySampler::sample of the worker", s[3], "", per_gib);
        print_ratio("  8-byte entries / PAGEMAP_SCAN present, shared maps (expected 3-10x)", s[1],
                    s[2], o.rounds, 0, tally);
        print_ratio("  8-byte entries / PAGEMAP_SCAN present+file, private maps", s[1], s[0],
                    o.rounds, 0, tally);
    }
    std::printf(
        "  (ResidencySampler::sample: /proc/PID/maps, cachestat of the file in 256 buckets, "
        "PAGEMAP_SCAN, present pages counted per bucket)\n");
    expect_cached(file, "after the pagemap runs");
}

// Section 3: cachestat of a smaller file cached two ways, and fincore on it.
void folio_section(const Options& o, Scratch& scratch) {
    const std::size_t bytes = o.small_mib * mib;
    const std::string file = scratch.make_file("residency-small", bytes);
    const auto pages = static_cast<long long>(bytes / page);
    std::printf("\n== cachestat cost follows the folio count: %zu MiB file, wall time, median ==\n",
                o.small_mib);
    std::printf("  %-31s %-38s %12s %10s %11s %s\n", "cached by", "folios", "cachestat 256",
                "1 bucket", "fincore cmd", "fincore / cachestat 256 (paired)");
    for (const bool random : {false, true}) {
        drop_cache(file);
        ensure_cached(file, bytes, random);
        const Worker keeper(file, bytes, 1, false); // mapped: stays cached
        const auto folios = count_folios(file, bytes);
        PageCacheProbe probe(file);
        const auto many = BucketLayout::make(pages, 256), one = BucketLayout::make(pages, 1);
        BucketCounts cached;
        auto sample = [&](const BucketLayout& layout) {
            const auto totals = probe.read(layout, cached);
            return totals && totals->cached == pages;
        };
        const auto c = interleaved({timed([&] { return sample(many); }, o.sample_reps),
                                    timed([&] { return sample(one); }, o.sample_reps),
                                    command("fincore", file, pages)},
                                   o.rounds);
        const Stats &s256 = c[0], &s1 = c[1], &fincore = c[2];
        if (cached_percent(file) < 99) throw SetupError(file + " fell out of the cache");
        std::printf("  %-31s %-38s %12s %10s %11s %8.1fx\n",
                    random ? "4 KiB preads, POSIX_FADV_RANDOM" : "sequential read (readahead)",
                    folio_text(folios, bytes).c_str(), text_of(s256.median()).c_str(),
                    text_of(s1.median()).c_str(), text_of(fincore.median()).c_str(),
                    paired_ratio(fincore, s256, o.rounds));
    }
    std::printf("  (cachestat walks the cache folio by folio; mincore, fincore and vmtouch look "
                "up every page)\n");
}

// Section 4: a file cached by its writer (one small folio per page, the expensive case for
// cachestat): what the recorder's residency sample costs in the steady state, read in rotation
// (the default: the buckets where the tree's present pages moved, none here, and 1/32 of the
// others) and exact (every sample, the whole-file call of issue 12), against `fincore`.
void writer_section(const Options& o, Scratch& scratch, Tally& tally) {
    const std::size_t bytes = o.file_mib * mib;
    const auto pages = static_cast<long long>(bytes / page);
    std::printf("\n== a %zu MiB file cached by its writer: one residency sample, steady state ==\n",
                o.file_mib);
    const std::string file = scratch.make_file("residency-written", bytes);
    // Written again 4 KiB at a time, as a preprocessing step writing records does: the 1 MiB
    // writes of make_file leave large folios where the file system has them (ext4, Linux 6.18).
    const int fd = open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    std::vector<std::uint64_t> record(page / sizeof(std::uint64_t), 0x5a5a5a5a5a5a5a5aULL);
    for (std::size_t off = 0; fd >= 0 && off < bytes; off += page) {
        record[0] = off; // no two pages alike
        if (write(fd, record.data(), page) != static_cast<ssize_t>(page))
            throw SetupError("cannot write " + file);
    }
    if (fd < 0 || fdatasync(fd) != 0) throw SetupError("cannot write back " + file);
    close(fd);
    if (cached_percent(file) < 99) throw SetupError(file + " is not cached after writing it");
    const Worker keeper(file, bytes, 1, true); // mapped: stays cached; not in the sampler's tree
    std::printf("  %s\n", folio_text(count_folios(file, bytes), bytes).c_str());
    ResidencyOptions rotation_options{.files = {file}};
    ResidencyOptions exact_options = rotation_options;
    exact_options.cache_exact_limit_us = -1;
    ResidencySampler rotation(rotation_options), exact(exact_options);
    Problems problems;
    CacheResidency last;
    auto sample = [&](ResidencySampler& sampler) {
        ResidencySample out;
        sampler.sample({}, out, problems);
        if (out.cache.size() != 1) return false;
        last = out.cache.front();
        return last.totals.cached >= pages * 99 / 100;
    };
    for (int i = 0; i < 3; ++i) // the first sample reads every bucket; steady state after
        if (!sample(rotation) || !sample(exact)) throw SetupError("no residency sample");
    const auto st = interleaved({timed([&] { return sample(rotation); }, o.sample_reps),
                                 timed([&] { return sample(exact); }, o.sample_reps),
                                 command("fincore", file, pages)},
                                o.rounds);
    const Stats &rotated = st[0], &exact_s = st[1], &fincore_cmd = st[2];
    expect_cached(file, "after");
    sample(rotation);
    std::printf("  (in rotation: %d of 256 buckets read per sample, the oldest carried %lld ms)\n",
                last.read_buckets.value_or(-1),
                static_cast<long long>(last.carried_age_ms.value_or(-1)));
    print_stats("ResidencySampler, rotation (default)", rotated);
    std::printf("  %-46s %11s  (every sample, %zu)\n", "ResidencySampler, rotation, mean",
                text_of(rotated.mean()).c_str(), rotated.us.size());
    print_stats("ResidencySampler, exact every sample", exact_s);
    print_stats("`fincore FILE` command (spawn to exit)", fincore_cmd);
    std::printf("\n  %-58s %9s %9s %7s %s\n", "ratio", "paired", "medians", "target", "result");
    print_ratio("fincore command / exact sample", fincore_cmd, exact_s, o.rounds, 0, tally);
    print_ratio("fincore command / rotation sample", fincore_cmd, rotated, o.rounds, 0, tally);
    print_ratio("exact sample / rotation sample", exact_s, rotated, o.rounds, 0, tally);
    const double amortized = fincore_cmd.median() / rotated.mean();
    const bool ok = amortized >= o.target_faster;
    (ok ? tally.met : tally.missed)++;
    std::printf("  %-58s %9s %8.2fx %7s %s\n",
                "fincore command / rotation sample, mean of all samples", "-", amortized,
                (">=" + std::to_string(static_cast<int>(o.target_faster))).c_str(),
                ok ? "PASS" : "MISSED");
}

int usage() {
    std::fprintf(stderr, "usage: loaderlens_bench_residency [--file-mib N] [--small-mib N] "
                         "[--rounds N] [--sample-reps N] [--section 4]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    init_cleanup();
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        const int value = std::atoi(argv[i + 1]);
        if (value < 1) return usage();
        if (arg == "--file-mib")
            o.file_mib = static_cast<std::size_t>(value);
        else if (arg == "--small-mib")
            o.small_mib = static_cast<std::size_t>(value);
        else if (arg == "--rounds")
            o.rounds = value;
        else if (arg == "--sample-reps")
            o.sample_reps = value;
        else if (arg == "--section")
            o.section = value;
        else
            return usage();
    }
    if (argc % 2 == 0) return usage();
    try {
        Scratch scratch; // declared first: removed after the workers that map its files
        if (o.section == 4) {
            Tally tally;
            writer_section(o, scratch, tally);
            return tally.missed ? 3 : 0;
        }
        const std::size_t bytes = o.file_mib * mib;
        std::fprintf(stderr, "generating a %zu MiB file...\n", o.file_mib);
        const std::string file = scratch.make_file("residency-data", bytes);
        // Cached by one sequential read, as a loader's first epoch over a file would leave it.
        drop_cache(file);
        ensure_cached(file, bytes);
        const Worker dense(file, bytes, 1, false); // keeps the file mapped, hence cached
        std::printf("file %s: %zu MiB, page %zu B, %s\n", file.c_str(), o.file_mib, page,
                    folio_text(count_folios(file, bytes), bytes).c_str());
        std::ifstream load("/proc/loadavg");
        std::string load1;
        load >> load1;
        std::printf("load average (1 min) at start: %s on %ld CPUs\n", load1.c_str(),
                    sysconf(_SC_NPROCESSORS_ONLN));
        Tally tally;
        page_cache_section(o, file, bytes, tally);
        pagemap_section(o, file, bytes, dense, tally);
        folio_section(o, scratch);
        writer_section(o, scratch, tally);
        std::printf("\ntargets: %d met, %d MISSED%s\n", tally.met, tally.missed,
                    tally.missed ? "  <-- see the rows marked MISSED" : "");
        return tally.missed ? 3 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "residency bench: %s\n", e.what());
        return 1;
    }
}
