// SPDX-License-Identifier: MIT
// What `loaderlens record` costs on realistic trees, and what one full sweep of such a tree costs
// loaderlens against psutil and smem (issue 12).
//
// A fleet is a parent with W workers that all map and touch the same file of M MiB (as DataLoader
// workers share a dataset); a lone idle process is the reference. For each fleet, in one run:
//  1. sweeps (fleet_sweeps.hpp): CPU per full PSS sweep of the tree by RollupSampler, the bare
//     smaps_rollup read, psutil's memory_full_info() and the smem command; CPU per per-file sweep
//     by the residency tier (pagemap) and the maps tier (smaps), per GiB mapped. Target: pagemap
//     >= 5x cheaper than smaps.
//  2. the recorder (fleet_recorder.hpp) with its defaults: CPU% of one core, the intervals it
//     chose, and the intervals between each process's own samples. Target, on the judged fleets
//     (16 x 256 MiB and 16 x 1 GiB by default): <= 5% of a core with RSS at 10 Hz, PSS at <= 1 s
//     and per-file figures (the residency tier) at <= 1 s for every process. The maps tier (smaps,
//     the per-kind breakdown) is shown, not judged: per-file figures of data files come from the
//     residency tier.
// A missed target prints MISSED and exits 3; a measurement that could not be made exits 1.
#include "fleet_recorder.hpp"
#include "fleet_sweeps.hpp"

#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#ifndef LOADERLENS_CLI_PATH
#define LOADERLENS_CLI_PATH "loaderlens"
#endif
#ifndef LOADERLENS_PSUTIL_SCRIPT
#define LOADERLENS_PSUTIL_SCRIPT "bench/psutil_sweep.py"
#endif

namespace {

using namespace loaderlens;
using namespace loaderlens::bench;

struct Fleet {
    int workers = 0;
    std::size_t mib = 0;
    std::string name() const {
        return std::to_string(workers) + " x " +
               (mib % 1024 ? std::to_string(mib) + " MiB" : std::to_string(mib / 1024) + " GiB");
    }
    auto operator<=>(const Fleet&) const = default;
};

struct Options {
    std::string cli = LOADERLENS_CLI_PATH;
    int seconds = 20;
    // How the fleet's files come into the page cache: "written" (the pages their writer left:
    // 4 KiB folios, mapped by 4 KiB entries; the worst case for every /proc walk), or "read"
    // (dropped after writing and read back sequentially, as a dataset read once from disk: large
    // folios on ext4 since Linux 6.16, mostly mapped by 2 MiB entries).
    std::string cache = "written";
    std::vector<Fleet> fleets{{4, 256}, {16, 256}, {64, 256}, {16, 1024}};
    std::set<Fleet> judged{{16, 256}, {16, 1024}};
    // Each fleet is recorded still, then moving (targets.hpp's Motion); the sweeps need a still
    // tree.
    std::vector<Motion> motions{Motion::still, Motion::moving};
    SweepOptions sweeps{.psutil_script = LOADERLENS_PSUTIL_SCRIPT};
    double target_percent = 5.0, target_pagemap = 5.0;
};

struct FleetResult {
    Fleet fleet;
    SweepResult sweeps;
    RecorderRun recorder;
};

struct Tally {
    int met = 0, missed = 0;
    const char* judge(bool ok) {
        (ok ? met : missed)++;
        return ok ? "PASS" : "MISSED";
    }
};

// "16x256,16x1024" -> fleets; empty on a malformed list.
std::vector<Fleet> parse_fleets(const std::string& text) {
    std::vector<Fleet> out;
    for (std::size_t pos = 0; pos <= text.size();) {
        const std::size_t comma = std::min(text.find(',', pos), text.size());
        int workers = 0;
        std::size_t mib = 0;
        char x = 0;
        if (std::sscanf(text.substr(pos, comma - pos).c_str(), "%d%c%zu", &workers, &x, &mib) !=
                3 ||
            x != 'x' || workers < 1 || workers > 60000 || mib < 1 || mib > 1024)
            return {};
        out.push_back({workers, mib});
        pos = comma + 1;
    }
    return out;
}

void print_sweeps(const std::vector<FleetResult>& results, const Options& o, Tally& tally) {
    std::printf("\n== one full PSS sweep of the tree: CPU per sweep (median of %d rounds), ratio "
                "to loaderlens's RollupSampler in the same rounds ==\n",
                o.sweeps.rounds);
    std::printf("%-14s %5s %11s %14s %20s %20s %20s %12s\n", "fleet", "procs", "raw read",
                "loaderlens", "psutil full_info", "smem command", "smem - start-up", "at 2 Hz ll");
    for (const FleetResult& f : results) {
        const SweepResult& s = f.sweeps;
        const int n = s.rounds;
        auto cell = [&](const Stats& x) {
            char t[48];
            std::snprintf(t, sizeof t, "%s %6.2fx", text_of(x.median()).c_str(),
                          paired_ratio(x, s.rollup, n));
            return std::string(t);
        };
        const double smem_net = s.smem.median() - s.smem_nothing.median();
        char net[48];
        std::snprintf(net, sizeof net, "%s %6.2fx", text_of(smem_net).c_str(),
                      smem_net / s.rollup.median());
        std::printf("%-14s %5d %11s %14s %20s %20s %20s %11.2f%%\n", f.fleet.name().c_str(),
                    s.processes, text_of(s.raw_rollup.median()).c_str(),
                    text_of(s.rollup.median()).c_str(), cell(s.psutil).c_str(),
                    cell(s.smem).c_str(), net, s.rollup.median() * 2 / 1e4);
    }
    std::printf("(loaderlens / raw read of smaps_rollup, paired:");
    for (const FleetResult& f : results)
        std::printf(" %s %.3fx;", f.fleet.name().c_str(),
                    paired_ratio(f.sweeps.rollup, f.sweeps.raw_rollup, f.sweeps.rounds));
    std::printf(")\n(psutil at 2 Hz would take");
    for (const FleetResult& f : results)
        std::printf(" %s %.2f%%;", f.fleet.name().c_str(), f.sweeps.psutil.median() * 2 / 1e4);
    std::printf(" of a core; smem with no process selected: %s)\n",
                results.empty() ? "-"
                                : text_of(results.front().sweeps.smem_nothing.median()).c_str());
    std::printf("sanity, PSS summed over the tree (KiB): loaderlens / psutil / smem:");
    for (const FleetResult& f : results)
        std::printf(" %.0f / %.0f / %.0f;", f.sweeps.rollup_pss_kb, f.sweeps.psutil_pss_kb,
                    f.sweeps.smem_pss_kb);

    std::printf("\n\n== per-file figures of every process: residency tier (pagemap) against maps "
                "tier (smaps), CPU per sweep and per GiB mapped ==\n");
    std::printf("%-14s %9s %6s %13s %13s %13s %13s %9s %7s %s\n", "fleet", "GiB mapped", "PMD",
                "smaps", "pagemap", "smaps /GiB", "pagemap /GiB", "ratio", "target", "result");
    for (const FleetResult& f : results) {
        const SweepResult& s = f.sweeps;
        const double ratio = paired_ratio(s.maps, s.residency, s.rounds);
        std::printf("%-14s %9.2f %5.0f%% %13s %13s %13s %13s %8.2fx %6s%.0f %s\n",
                    f.fleet.name().c_str(), s.mapped_gib, 100 * s.pmd_mapped_gib / s.mapped_gib,
                    text_of(s.maps.median()).c_str(), text_of(s.residency.median()).c_str(),
                    text_of(s.maps.median() / s.mapped_gib).c_str(),
                    text_of(s.residency.median() / s.mapped_gib).c_str(), ratio,
                    ">=", o.target_pagemap, tally.judge(ratio >= o.target_pagemap));
    }
    std::printf("sanity, the file over the tree (KiB), smaps / pagemap: RSS, PSS:");
    for (const FleetResult& f : results)
        std::printf(" %.0f / %.0f, %.0f / %.0f;", f.sweeps.smaps_file_rss_kb,
                    f.sweeps.pagemap_file_rss_kb, f.sweeps.smaps_file_pss_kb,
                    f.sweeps.pagemap_file_pss_kb);
    std::printf("\n");
}

void print_recorder(const std::vector<RecorderRun>& runs, const std::vector<bool>& judged,
                    const Options& o, Tally& tally) {
    std::printf("\n== loaderlens record (defaults: fast 100 ms, rollup 1 s, maps 5 s, "
                "residency 1 s, --cpu-budget 5%%): CPU of one core ==\n");
    std::printf("%-26s %6s %8s %7s %7s %8s %12s %7s %s\n", "scenario", "procs", "recorded",
                "wall s", "cpu s", "cpu %", "after warmup", "target", "result");
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const RecorderRun& r = runs[i];
        std::printf("%-26s %6d %8zu %7.2f %7.2f %7.2f%% %11.2f%% %7s %s\n", r.name.c_str(),
                    r.processes, r.recorded, r.wall_s, r.cpu_s, r.percent(), r.steady_percent,
                    judged[i] ? "<=5%" : "-",
                    judged[i] ? tally.judge(r.percent() <= o.target_percent) : "info");
    }
    // The budget is kept by stretching intervals: show by how much (tier_stats), and what each
    // process got: the fewest samples, the worst mean interval (window / samples) and the longest
    // stretch without a sample over the processes, in the window after warm-up.
    std::printf("\nintervals (ms): the recorder's choice (tier_stats) and each process's own "
                "samples after warm-up\n");
    std::printf("%-26s %-9s %7s %8s %7s %10s %12s %5s %6s %9s %8s %7s %s\n", "scenario", "tier",
                "nominal", "longest", "last", "cpu µs/run", "at nominal %", "procs", "fewest",
                "worst mean", "longest", "target", "result");
    for (std::size_t i = 0; i < runs.size(); ++i)
        for (const TierSummary& t : runs[i].tiers) {
            if (t.tier == "cgroup") continue;
            const double nominal = static_cast<double>(std::max<std::int64_t>(t.nominal_ms, 1));
            const auto it = runs[i].gaps.find(t.tier);
            const TierGaps g = it == runs[i].gaps.end() ? TierGaps{} : it->second;
            // RSS at 10 Hz, PSS and per-file (residency) at <= 1 s; 5% for the scheduling jitter
            // of a mean interval measured over a few samples.
            const double limit = t.tier == "fast" ? 100 : t.tier == "maps" ? 0 : 1000;
            const bool judge = judged[i] && limit > 0 && runs[i].processes > 1;
            // Every process has fast and rollup samples, every worker (not the leader, which maps
            // nothing) residency ones.
            const int expected = runs[i].processes - (t.tier == "residency" ? 1 : 0);
            char target[16] = "-";
            if (judge) std::snprintf(target, sizeof target, "<=%.0f", limit);
            std::printf(
                "%-26s %-9s %7lld %8lld %7lld %10.1f %11.2f%% %5d %6d %9.0f %8.0f %7s %s\n",
                runs[i].name.c_str(), t.tier.c_str(), static_cast<long long>(t.nominal_ms),
                static_cast<long long>(t.longest_ms), static_cast<long long>(t.last_ms),
                t.cpu_us_per_run, t.cpu_us_per_run / (nominal * 1000) * 100, g.processes,
                g.fewest_samples, g.worst_mean_ms, g.longest_gap_ms, target,
                judge ? tally.judge(g.processes >= expected && g.worst_mean_ms <= limit * 1.05)
                      : "info");
        }
    std::printf("(maps, the smaps per-kind breakdown, is not judged: per-file figures of the data "
                "files come from the residency tier)\n\nsanity (peak sums over the tree, from the "
                "recording):\n");
    for (const RecorderRun& r : runs)
        std::printf("  %-26s sum RSS %.1f MiB, sum PSS %.1f MiB\n", r.name.c_str(),
                    static_cast<double>(r.peak_rss.value_or(0)) / 1024,
                    static_cast<double>(r.peak_pss.value_or(0)) / 1024);
}

// PSS at 1 s ticks against the kernel at stopped moments (fleet_recorder.hpp's PssCheck), beside
// what psutil's memory_full_info() sweep of the same still fleet costs at 1 Hz.
void print_pss(const std::vector<RecorderRun>& runs, const std::vector<FleetResult>& results,
               Tally& tally) {
    std::printf("\n== PSS: the recorder's rows against smaps_rollup read by the bench at stopped "
                "moments (tree SIGSTOPped 1.5 s every 3 s) ==\n");
    std::printf("%-26s %8s %9s %9s %8s %9s %9s %9s %15s %10s %s\n", "scenario", "moments",
                "worst sum", "mean sum", "worst 1", "interval", "mean age", "max age",
                "fresh/comp/kept", "psutil 1Hz", "result (sum <= 1%)");
    for (const RecorderRun& r : runs) {
        if (r.pss.moments == 0) continue;
        const auto g = r.gaps.find("rollup");
        double psutil = -1;
        for (const FleetResult& f : results)
            if (r.name.starts_with(f.fleet.name() + " ")) psutil = f.sweeps.psutil.median() / 1e4;
        char psutil_text[16] = "-";
        if (psutil >= 0) std::snprintf(psutil_text, sizeof psutil_text, "%.2f%%", psutil);
        char rows[32];
        std::snprintf(rows, sizeof rows, "%d/%d/%d", r.pss.fresh_rows, r.pss.composite_rows,
                      r.pss.kept_rows);
        std::printf("%-26s %4d/%-3d %8.3f%% %8.3f%% %7.2f%% %7.0fms %7.0fms %7.0fms %15s %10s %s\n",
                    r.name.c_str(), r.pss.matched, r.pss.moments, 100 * r.pss.worst_sum,
                    100 * r.pss.mean_sum, 100 * r.pss.worst_process,
                    g == r.gaps.end() ? 0.0 : g->second.worst_mean_ms, r.pss.mean_age_ms,
                    r.pss.max_age_ms, rows, psutil_text,
                    r.pss.matched == 0 ? "no tick inside a stopped window"
                                       : tally.judge(r.pss.worst_sum <= 0.01));
    }
    std::printf("(worst 1: the largest error of one process's PSS; interval: the worst mean "
                "interval between a process's PSS rows; age: of the kernel reading a row "
                "carries; fresh/comp/kept: rows read afresh, composite, kept)\n");
}

// Drops the (flushed, unmapped) file from the page cache and reads it back in 1 MiB pieces: the
// readahead's large folios. (Left to the workers' concurrent first touches, only 12-44% of the
// mappings ended up 2 MiB-mapped.)
void read_back(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    std::vector<char> buffer(mib);
    for (ssize_t n = 1; ok && n > 0;)
        ok = (n = read(fd, buffer.data(), buffer.size())) >= 0;
    if (fd >= 0) close(fd);
    if (!ok) throw SetupError("cannot drop and read back " + path);
}

int usage() {
    std::fprintf(stderr, "usage: loaderlens_bench_fleet [--cli PATH] [--seconds N] [--fleets "
                         "WxMIB,...] [--judge WxMIB,...]\n"
                         "  [--motion still|moving|still,moving]\n"
                         "  [--rounds N] [--cache written|read] [--python PATH]\n"
                         "  [--psutil-script PATH] [--smem PATH]\n");
    return 2;
}

std::string first_line(const char* path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// 1, 5 and 15 min load averages: another job on this 2-core machine shows here.
std::string load_average() {
    std::istringstream in(first_line("/proc/loadavg"));
    std::string one, five, fifteen;
    in >> one >> five >> fifteen;
    return one + " " + five + " " + fifteen;
}

} // namespace

int main(int argc, char** argv) {
    init_cleanup();
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string value = argv[++i];
        if (arg == "--cli") {
            o.cli = value;
        } else if (arg == "--seconds" || arg == "--rounds") {
            const int n = std::atoi(value.c_str());
            if (n < 2) return usage();
            (arg == "--seconds" ? o.seconds : o.sweeps.rounds) = n;
        } else if (arg == "--fleets" || arg == "--judge") {
            auto fleets = parse_fleets(value);
            if (fleets.empty()) return usage();
            if (arg == "--fleets")
                o.fleets = fleets;
            else
                o.judged = {fleets.begin(), fleets.end()};
        } else if (arg == "--motion") {
            o.motions.clear();
            if (value.find("still") != std::string::npos) o.motions.push_back(Motion::still);
            if (value.find("moving") != std::string::npos) o.motions.push_back(Motion::moving);
            if (o.motions.empty()) return usage();
        } else if (arg == "--cache" && (value == "written" || value == "read")) {
            o.cache = value;
        } else if (arg == "--python") {
            o.sweeps.python = value;
        } else if (arg == "--psutil-script") {
            o.sweeps.psutil_script = value;
        } else if (arg == "--smem") {
            o.sweeps.smem = value;
        } else {
            return usage();
        }
    }
    if (access(o.cli.c_str(), X_OK) != 0) {
        std::fprintf(stderr, "fleet bench: %s is not an executable (build the loaderlens target)\n",
                     o.cli.c_str());
        return 1;
    }
    try {
        check_baselines(o.sweeps); // before minutes of setup: a missing baseline is a broken run
        std::printf("kernel %s; %ld CPUs; load average at start %s; files cached: %s\n",
                    first_line("/proc/sys/kernel/osrelease").c_str(), sysconf(_SC_NPROCESSORS_ONLN),
                    load_average().c_str(), o.cache.c_str());
        Scratch scratch; // declared first: removed after the trees that map its files
        std::map<std::size_t, std::string> files;
        for (const Fleet& f : o.fleets)
            if (!files.contains(f.mib)) {
                std::fprintf(stderr, "generating a %zu MiB file...\n", f.mib);
                files[f.mib] = scratch.make_file("fleet-" + std::to_string(f.mib), f.mib * mib);
                if (o.cache == "read") read_back(files[f.mib]);
            }
        std::vector<RecorderRun> runs;
        std::vector<bool> judged;
        {
            const TargetTree lone("", 0);
            runs.push_back(
                record_tree(o.cli, o.seconds, scratch, "1 process, nothing mapped", lone));
            judged.push_back(true);
        }
        std::vector<FleetResult> results;
        std::vector<std::string> loads;
        for (const Fleet& f : o.fleets) {
            loads.push_back(f.name() + ": " + load_average());
            for (const Motion motion : o.motions) {
                const bool still = motion == Motion::still;
                const std::string name = f.name() + (still ? " still" : " moving");
                std::fprintf(stderr, "%s: starting the tree...\n", name.c_str());
                const TargetTree tree(files[f.mib], f.workers, motion);
                std::int64_t rss_kib = 0; // the file must really be resident in every worker
                for (pid_t w : children_of(tree.leader()))
                    rss_kib += resident_kib(w);
                if (still && static_cast<std::size_t>(rss_kib) * 1024 < f.workers * f.mib * mib)
                    throw SetupError(f.name() + ": the workers do not have the file resident");
                FleetResult result{f, {}, {}};
                if (still) {
                    std::fprintf(stderr, "%s: sweeps...\n", name.c_str());
                    result.sweeps = measure_sweeps(tree, files[f.mib], o.sweeps);
                }
                result.recorder = record_tree(o.cli, o.seconds, scratch, name, tree, true);
                runs.push_back(result.recorder);
                judged.push_back(o.judged.contains(f));
                if (still) results.push_back(std::move(result));
            }
        }
        Tally tally;
        print_sweeps(results, o, tally);
        print_recorder(runs, judged, o, tally);
        print_pss(runs, results, tally);
        std::printf("\nload average before each fleet:");
        for (const std::string& l : loads)
            std::printf(" %s;", l.c_str());
        std::printf("\nload average at end %s\ntargets: %d met, %d MISSED%s\n",
                    load_average().c_str(), tally.met, tally.missed,
                    tally.missed ? "  <-- see the rows marked MISSED" : "");
        return tally.missed ? 3 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fleet bench: %s\n", e.what());
        return 1;
    }
}
