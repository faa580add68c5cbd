// SPDX-License-Identifier: MIT
#include "fleet_sweeps.hpp"

#include "loaderlens/maps_sampler.hpp"
#include "loaderlens/proc_text.hpp"
#include "loaderlens/residency_sampler.hpp"
#include "loaderlens/rollup_sampler.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

namespace loaderlens::bench {

namespace {

const auto page_kb = static_cast<double>(sysconf(_SC_PAGESIZE)) / 1024;

// The tree as the recorder's tracker would give it to the samplers: the leader and its workers.
std::vector<ProcessInfo> fleet_processes(const TargetTree& tree) {
    std::vector<pid_t> pids = children_of(tree.leader());
    std::sort(pids.begin(), pids.end());
    pids.insert(pids.begin(), tree.leader());
    std::vector<ProcessInfo> live;
    for (pid_t pid : pids) {
        ProcessInfo info;
        info.id = static_cast<std::int64_t>(live.size()) + 1;
        info.key = {pid, read_proc_stat(pid).start_ticks};
        info.ppid = pid == tree.leader() ? getpid() : tree.leader();
        info.comm = tree.comm();
        info.role = pid == tree.leader() ? Role::main : Role::worker;
        live.push_back(std::move(info));
    }
    if (static_cast<int>(live.size()) != tree.processes())
        throw SetupError("found " + std::to_string(live.size()) + " processes in the tree, made " +
                         std::to_string(tree.processes()));
    return live;
}

// The floor: one pread of each process's smaps_rollup, the files kept open (as RollupSampler).
class RawRollup {
  public:
    explicit RawRollup(const std::vector<ProcessInfo>& live) {
        for (const ProcessInfo& p : live) {
            const std::string path = "/proc/" + std::to_string(p.key.pid) + "/smaps_rollup";
            const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) throw SetupError("cannot open " + path + ": " + std::strerror(errno));
            fds_.push_back(fd);
        }
    }
    ~RawRollup() {
        for (int fd : fds_)
            close(fd);
    }
    RawRollup(const RawRollup&) = delete;
    RawRollup& operator=(const RawRollup&) = delete;
    bool sweep() {
        for (int fd : fds_)
            if (pread(fd, buffer_, sizeof buffer_, 0) <= 0) return false;
        return true;
    }

  private:
    std::vector<int> fds_;
    char buffer_[4096];
};

// The values after `key` on the line of `out` that starts with it ("sweep_us 1.0 2.0").
std::vector<double> line_values(const std::string& out, const std::string& key) {
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string first;
        if (!(words >> first) || first != key) continue;
        std::vector<double> values;
        for (double v; words >> v;)
            values.push_back(v);
        return values;
    }
    throw SetupError("psutil_sweep.py printed no " + key + " line:\n" + out);
}

// smem's "-H -c 'pid pss'" rows: how many, and their PSS sum (KiB).
std::pair<int, double> smem_rows(const std::string& out) {
    std::istringstream lines(out);
    int rows = 0;
    double pss = 0;
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        long long pid = 0;
        double kb = 0;
        if (words >> pid >> kb) {
            ++rows;
            pss += kb;
        }
    }
    return {rows, pss};
}

void expect_close(const char* what, double a, double b, double tolerance) {
    if (std::abs(a - b) <= tolerance * std::max(std::abs(a), std::abs(b))) return;
    throw SetupError(std::string(what) + " disagree: " + std::to_string(std::llround(a)) + " vs " +
                     std::to_string(std::llround(b)) + " KiB (not a like-for-like comparison)");
}

} // namespace

void check_baselines(const SweepOptions& o) {
    try {
        run_command({o.python, "-c", "import psutil"});
    } catch (const SetupError&) {
        throw SetupError("psutil baseline cannot run: `" + o.python +
                         " -c 'import psutil'` failed (Debian package python3-psutil)");
    }
    if (access(o.psutil_script.c_str(), R_OK) != 0)
        throw SetupError("psutil baseline cannot run: no script at " + o.psutil_script +
                         " (--psutil-script)");
    try {
        run_command({o.smem, "-H", "-c", "pid", "-P", "^no-such-process$"});
    } catch (const SetupError&) {
        throw SetupError("smem baseline cannot run: `" + o.smem +
                         "` is missing or failed (Debian package smem)");
    }
}

SweepResult measure_sweeps(const TargetTree& tree, const std::string& file, const SweepOptions& o) {
    const std::vector<ProcessInfo> live = fleet_processes(tree);
    const int n = static_cast<int>(live.size());
    SweepResult r;
    r.processes = n;
    r.rounds = o.rounds;

    // How the file is mapped decides what every walk costs: 4 KiB page-table entries (a file
    // cached by its writer) or 2 MiB ones (large folios, as a file read from disk on this kernel).
    for (const ProcessInfo& p : live) {
        const auto text = read_text_file("/proc/" + std::to_string(p.key.pid) + "/smaps_rollup");
        if (!text) throw SetupError("cannot read smaps_rollup of " + std::to_string(p.key.pid));
        r.pmd_mapped_gib += number_after(*text, "FilePmdMapped:", "smaps_rollup") / (1024 * 1024);
    }
    RawRollup raw(live);
    RollupSampler rollup;
    MapsSampler maps;
    ResidencySampler residency(ResidencyOptions{});
    Problems problems;
    auto rollup_sweep = [&] {
        std::vector<RollupSample> out;
        rollup.sample(live, out, problems);
        double pss = 0;
        for (const auto& s : out)
            pss += static_cast<double>(s.pss.value_or(0));
        r.rollup_pss_kb = pss;
        return static_cast<int>(out.size()) == n && problems.empty();
    };
    auto maps_sweep = [&] {
        std::vector<MapsSample> out;
        maps.sample(live, out, problems);
        r.smaps_file_rss_kb = r.smaps_file_pss_kb = 0;
        for (const auto& s : out)
            for (const auto& object : s.objects)
                if (object.path == file) {
                    r.smaps_file_rss_kb += static_cast<double>(object.rss_kb);
                    r.smaps_file_pss_kb += static_cast<double>(object.pss_kb);
                }
        return static_cast<int>(out.size()) == n && problems.empty();
    };
    auto residency_sweep = [&] {
        ResidencySample out;
        residency.sample(live, out, problems);
        r.pagemap_file_rss_kb = r.pagemap_file_pss_kb = r.mapped_gib = 0;
        for (const auto& m : out.mapped) {
            r.pagemap_file_rss_kb += static_cast<double>(m.present_pages) * page_kb;
            r.pagemap_file_pss_kb += static_cast<double>(m.pss_kb.value_or(0));
            r.mapped_gib += static_cast<double>(m.mapped_pages) * page_kb / (1024.0 * 1024);
        }
        return !out.mapped.empty() && !out.cache.empty() && problems.empty();
    };

    std::vector<std::string> psutil_argv{o.python, o.psutil_script, std::to_string(o.reps)};
    for (const ProcessInfo& p : live)
        psutil_argv.push_back(std::to_string(p.key.pid));
    auto psutil = [&](Stats& stats) {
        const CommandRun run = run_command(psutil_argv);
        const auto sweeps = line_values(run.out, "sweep_us");
        if (static_cast<int>(line_values(run.out, "processes").at(0)) != n ||
            static_cast<int>(sweeps.size()) != o.reps)
            throw SetupError("psutil_sweep.py did not read every process:\n" + run.out);
        stats.us.insert(stats.us.end(), sweeps.begin(), sweeps.end());
        r.psutil_pss_kb = line_values(run.out, "pss_kb").at(0);
    };
    const std::vector<std::string> smem_argv{o.smem,    "-H", "-c",
                                             "pid pss", "-P", "^" + tree.comm() + "$"};
    auto smem = [&](Stats& stats) {
        const CommandRun run = run_command(smem_argv);
        const auto [rows, pss] = smem_rows(run.out);
        if (rows != n)
            throw SetupError("smem -P found " + std::to_string(rows) + " processes of " +
                             std::to_string(n) + ":\n" + run.out);
        stats.us.push_back(run.cpu_us);
        r.smem_pss_kb = pss;
    };
    auto smem_nothing = [&](Stats& stats) {
        stats.us.push_back(
            run_command({o.smem, "-H", "-c", "pid pss", "-P", "^no-such-process$"}).cpu_us);
    };

    auto st = interleaved({cpu_timed([&] { return raw.sweep(); }, o.reps),
                           cpu_timed(rollup_sweep, o.reps), psutil, smem, smem_nothing,
                           cpu_timed(maps_sweep, o.reps), cpu_timed(residency_sweep, o.reps)},
                          o.rounds);
    r.raw_rollup = std::move(st[0]);
    r.rollup = std::move(st[1]);
    r.psutil = std::move(st[2]);
    r.smem = std::move(st[3]);
    r.smem_nothing = std::move(st[4]);
    r.maps = std::move(st[5]);
    r.residency = std::move(st[6]);

    // The tools must have read the same memory, or the ratios compare different work.
    expect_close("PSS sums of RollupSampler and psutil", r.rollup_pss_kb, r.psutil_pss_kb, 0.02);
    expect_close("PSS sums of RollupSampler and smem", r.rollup_pss_kb, r.smem_pss_kb, 0.02);
    expect_close("the file's RSS by smaps and by pagemap", r.smaps_file_rss_kb,
                 r.pagemap_file_rss_kb, 0.01);
    expect_close("the file's PSS by smaps and computed from pagemap", r.smaps_file_pss_kb,
                 r.pagemap_file_pss_kb, 0.01);
    return r;
}

} // namespace loaderlens::bench
