// SPDX-License-Identifier: MIT
// Cost per process of each sampling tier, as a ratio to the raw kernel read the tier wraps.
//
// The kernel's work (formatting statm, walking page tables for smaps_rollup) is the floor no
// recorder can go under; what the tool adds on top (lookups, parsing, allocations) is what we own.
// So each row times the core sampler and a bare pread/read of the same file, on the same idle
// target process. Targets have 0, 256 MiB and 1 GiB of a mapped file resident, because the smaps
// walks grow with resident memory.
//
// Each row is a paired benchmark (paired.hpp): core and raw calls alternate in blocks and the
// ratio is the median over block pairs, then over 5 repetitions run in random interleaved order.
#include "loaderlens/fast_sampler.hpp"
#include "loaderlens/maps_sampler.hpp"
#include "loaderlens/rollup_sampler.hpp"
#include "paired.hpp"

#include <benchmark/benchmark.h>
#include <cstdio>
#include <libproc2/pids.h>
#include <map>
#include <memory>

namespace {

using namespace loaderlens;
using namespace loaderlens::bench;

// FastSampler against the reads it makes. A simulated clock: `tick_ms` 0 keeps "now" still so
// status is never due again (the idle steady state); 100 is the default fast interval, where even
// an idle process has status re-read once a second, i.e. every 10th call (`status_every`).
void fast_row(benchmark::State& state, const Subject& s, std::int64_t max_age_ms,
              std::int64_t tick_ms, int status_every) {
    FastSampler sampler(max_age_ms);
    const std::vector<ProcessInfo> live{s.info};
    std::vector<FastSample> out;
    Problems problems;
    std::int64_t now = 0, raw_calls = 0;
    auto core = [&] {
        now += tick_ms;
        out.clear();
        sampler.sample(live, now, out, problems);
        return !out.empty() && out.front().rss.has_value();
    };
    auto raw = [&] {
        bool ok = raw_pread(s.statm);
        if (status_every > 0 && raw_calls++ % status_every == 0) ok = ok && raw_pread(s.status);
        return ok;
    };
    paired(state, core, raw);
}

// libproc2 asked for the same smaps_rollup fields as RollupSampler, the way api-notes says to
// use it for a known tree: one info created once, then a select of the PID per sample.
class Proc2Rollup {
  public:
    Proc2Rollup() {
        if (procps_pids_new(&info_, items_.data(), static_cast<int>(items_.size())) < 0)
            throw SetupError("procps_pids_new failed");
    }
    ~Proc2Rollup() { procps_pids_unref(&info_); }
    Proc2Rollup(const Proc2Rollup&) = delete;
    Proc2Rollup& operator=(const Proc2Rollup&) = delete;

    // PSS in KiB, or nullopt when the process was not returned.
    std::optional<unsigned long> pss(pid_t pid) {
        unsigned which = static_cast<unsigned>(pid);
        pids_fetch* fetch = procps_pids_select(info_, &which, 1, PIDS_SELECT_PID);
        if (!fetch || fetch->counts->total != 1) return std::nullopt;
        pids_stack* row = fetch->stacks[0];
        if (row->head[0].result.s_int != pid) return std::nullopt; // match by PID, not position
        return row->head[2].result.ul_int;
    }

  private:
    std::array<pids_item, 13> items_{PIDS_ID_PID,         PIDS_SMAP_RSS,       PIDS_SMAP_PSS,
                                     PIDS_SMAP_PSS_ANON,  PIDS_SMAP_PSS_FILE,  PIDS_SMAP_PSS_SHMEM,
                                     PIDS_SMAP_SHR_CLEAN, PIDS_SMAP_SHR_DIRTY, PIDS_SMAP_PRV_CLEAN,
                                     PIDS_SMAP_PRV_DIRTY, PIDS_SMAP_SWAP,      PIDS_SMAP_SWAP_PSS,
                                     PIDS_SMAP_LOCKED};
    pids_info* info_ = nullptr;
};

// The rollup-tier readers, each as a "call" for paired().
struct RollupReaders {
    const Subject& s;
    RollupSampler sampler;
    Proc2Rollup proc2;
    std::vector<ProcessInfo> live{s.info};
    std::vector<RollupSample> out;
    Problems problems;

    bool core() {
        out.clear();
        sampler.sample(live, out, problems);
        return !out.empty() && out.front().pss.has_value();
    }
    bool libproc2() { return proc2.pss(s.info.key.pid).value_or(0) > 0; }
    bool raw() const { return raw_pread(s.rollup); }
};

void rollup_row(benchmark::State& state, const Subject& s, const char* core_name,
                const char* raw_name) {
    RollupReaders readers{s};
    auto pick = [&](std::string_view name) -> std::function<bool()> {
        if (name == "sampler") return [&] { return readers.core(); };
        if (name == "libproc2") return [&] { return readers.libproc2(); };
        return [&] { return readers.raw(); };
    };
    // std::function on both sides: the same few ns of indirection each, against >= 30 µs reads.
    paired(state, pick(core_name), pick(raw_name));
}

void maps_row(benchmark::State& state, const Subject& s) {
    MapsSampler sampler;
    const std::vector<ProcessInfo> live{s.info};
    std::vector<MapsSample> out;
    Problems problems;
    const std::string path = s.proc_path("smaps");
    auto core = [&] {
        out.clear();
        sampler.sample(live, out, problems);
        return !out.empty() && !out.front().objects.empty();
    };
    paired(state, core, [&] { return raw_read_file(path); });
}

const std::vector<Row>& rows() {
    static const std::vector<Row> all{
        {"fast/idle", "fast", "FastSampler, idle (statm only)", "pread statm", 1.3,
         [](auto& st, const Subject& s) { fast_row(st, s, 1000, 0, 0); }},
        {"fast/100ms", "fast", "FastSampler, 100 ms ticks", "statm, status 1/10", std::nullopt,
         [](auto& st, const Subject& s) { fast_row(st, s, 1000, 100, 10); }},
        {"fast/status_always", "fast", "FastSampler, status_max_age 0", "pread statm+status",
         std::nullopt, [](auto& st, const Subject& s) { fast_row(st, s, 0, 100, 1); }},
        {"rollup/sampler", "rollup", "RollupSampler", "pread smaps_rollup", 1.1,
         [](auto& st, const Subject& s) { rollup_row(st, s, "sampler", "raw"); }},
        {"rollup/libproc2", "rollup", "libproc2 pids_select", "pread smaps_rollup", std::nullopt,
         [](auto& st, const Subject& s) { rollup_row(st, s, "libproc2", "raw"); }},
        {"rollup/libproc2_vs_sampler", "rollup", "libproc2 pids_select", "RollupSampler",
         std::nullopt,
         [](auto& st, const Subject& s) { rollup_row(st, s, "libproc2", "sampler"); }},
        {"maps/sampler", "maps", "MapsSampler", "open+read smaps", std::nullopt,
         [](auto& st, const Subject& s) { maps_row(st, s); }},
    };
    return all;
}

// Shows only the medians on the console and keeps them (and the spread) for the ratio table.
class MedianReporter : public benchmark::ConsoleReporter {
  public:
    MedianReporter() : ConsoleReporter(OO_Tabular) {}
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& run : runs) {
            const std::string& name = run.run_name.function_name;
            if (run.error_occurred) {
                errors_.push_back(name + ": " + run.error_message);
                shown_.push_back(run);
            } else if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median") {
                for (const auto& [counter, value] : run.counters)
                    medians_[name][counter] = value.value;
                shown_.push_back(run);
            } else if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "cv") {
                auto it = run.counters.find("ratio");
                if (it != run.counters.end()) ratio_cv_[name] = it->second.value;
            }
        }
    }
    // Interleaving reports the benchmarks in random order: print them sorted, at the end.
    void Finalize() override {
        std::stable_sort(shown_.begin(), shown_.end(), [](const Run& a, const Run& b) {
            return a.family_index < b.family_index;
        });
        if (!shown_.empty()) ConsoleReporter::ReportRuns(shown_);
        ConsoleReporter::Finalize();
    }
    std::optional<double> median(const std::string& name, const std::string& counter) const {
        auto it = medians_.find(name);
        if (it == medians_.end() || !it->second.contains(counter)) return std::nullopt;
        return it->second.at(counter);
    }
    double ratio_cv(const std::string& name) const {
        return ratio_cv_.contains(name) ? ratio_cv_.at(name) : 0;
    }
    const std::vector<std::string>& errors() const { return errors_; }

  private:
    std::map<std::string, std::map<std::string, double>> medians_;
    std::map<std::string, double> ratio_cv_;
    std::vector<std::string> errors_;
    std::vector<Run> shown_;
};

struct Tally {
    int met = 0, missed = 0;
    bool complete = true;
};

// Prints one table of rows for the given subjects; solo rows (vs "-") have no raw and no ratio.
void print_rows(const char* title, const std::vector<const Subject*>& subjects,
                const std::vector<Row>& rows, const MedianReporter& r, Tally& tally) {
    std::printf("\n== %s ==\n", title);
    std::printf("%-8s %-6s %-30s %-19s %10s %10s %7s %6s %7s %s\n", "target", "tier", "measured",
                "vs", "core µs", "vs µs", "ratio", "noise", "target", "result");
    for (const Subject* s : subjects) {
        for (const Row& row : rows) {
            const std::string name = s->tag + "/" + row.key;
            const bool is_solo = std::string_view(row.vs) == "-";
            const auto core = r.median(name, "core_us"), raw = r.median(name, "raw_us"),
                       ratio = r.median(name, "ratio");
            if (!core || (!is_solo && (!raw || !ratio))) {
                std::printf("%-8s %-6s %-30s %-19s   (measurement missing)\n", s->label.c_str(),
                            row.tier, row.what, row.vs);
                tally.complete = false;
                continue;
            }
            if (is_solo) {
                std::printf("%-8s %-6s %-30s %-19s %10.2f %10s %7s %6s %7s %s\n", s->label.c_str(),
                            row.tier, row.what, row.vs, *core, "-", "-", "-", "-", "info");
                continue;
            }
            char target[16] = "-";
            const char* result = "info";
            if (row.target) {
                std::snprintf(target, sizeof target, "<=%.2f", *row.target);
                const bool ok = *ratio <= *row.target;
                result = ok ? "PASS" : "MISSED";
                (ok ? tally.met : tally.missed)++;
            }
            std::printf("%-8s %-6s %-30s %-19s %10.2f %10.2f %6.3fx %5.1f%% %7s %s\n",
                        s->label.c_str(), row.tier, row.what, row.vs, *core, *raw, *ratio,
                        r.ratio_cv(name) * 100, target, result);
        }
    }
}

// Prints both tables and the verdicts; returns false when a measurement is missing (broken run).
bool print_tables(const std::vector<std::unique_ptr<Subject>>& subjects, const MedianReporter& r) {
    Tally tally;
    std::vector<const Subject*> all;
    for (const auto& s : subjects)
        all.push_back(s.get());
    print_rows("loaderlens sampler cost per process: CPU time per call (µs), paired ratio core/vs",
               all, rows(), r, tally);
    // The core reads smaps_rollup directly instead of through libproc2: is that right?
    std::printf("\nrollup tier, libproc2 procps_pids_select vs RollupSampler (direct pread):\n");
    for (const auto& s : subjects)
        if (auto ratio = r.median(s->tag + "/rollup/libproc2_vs_sampler", "ratio"))
            std::printf("  %-8s libproc2 costs %.3fx RollupSampler -> %s\n", s->label.c_str(),
                        *ratio,
                        *ratio > 1.02   ? "direct read is cheaper"
                        : *ratio < 0.98 ? "libproc2 is cheaper"
                                        : "no difference beyond 2%");
    std::printf("\ntargets: %d met, %d MISSED%s\n", tally.met, tally.missed,
                tally.missed ? "  <-- see the rows marked MISSED" : "");
    std::printf("(noise = coefficient of variation of the ratio over the repetitions)\n");
    if (!subjects.empty()) {
        print_rows("where the time goes (core helpers; parsers on captured text, no kernel read)",
                   {subjects.front().get()}, breakdown_rows(), r, tally);
        if (auto procs = r.median(subjects.front()->tag + "/tree/scan", "machine_procs"))
            std::printf(
                "(the tree scan lists all %.0f processes on this machine every fast tick)\n",
                *procs);
    }
    for (const auto& e : r.errors())
        std::printf("error: %s\n", e.c_str());
    return tally.complete && r.errors().empty();
}

// Checks that each target really has its file resident (else the timings mean nothing) and that
// libproc2 and the core agree on PSS (else the comparison is not like for like).
void check_targets(const std::vector<std::unique_ptr<Subject>>& subjects) {
    Proc2Rollup proc2;
    for (const auto& s : subjects) {
        RollupSampler sampler;
        std::vector<RollupSample> out;
        Problems problems;
        sampler.sample({s->info}, out, problems);
        if (out.empty() || !out.front().rss || !out.front().pss)
            throw SetupError("cannot read smaps_rollup of target " + s->label);
        const auto lp = proc2.pss(s->info.key.pid);
        std::printf("target %-8s pid %-7d RSS %8lld kB  PSS %8lld kB (libproc2 PSS %s kB)\n",
                    s->label.c_str(), s->info.key.pid, static_cast<long long>(*out.front().rss),
                    static_cast<long long>(*out.front().pss),
                    lp ? std::to_string(*lp).c_str() : "n/a");
        if (static_cast<std::size_t>(*out.front().rss) * 1024 < s->mapped_bytes)
            throw SetupError("target " + s->label + " does not have its file resident");
    }
}

std::string size_label(std::size_t mib_count) {
    if (mib_count >= 1024 && mib_count % 1024 == 0)
        return std::to_string(mib_count / 1024) + " GiB";
    return std::to_string(mib_count) + " MiB";
}

} // namespace

int main(int argc, char** argv) {
    init_cleanup();
    std::vector<std::size_t> sizes_mib{0, 256, 1024};
    std::vector<char*> args{argv[0]};
    // Defaults first: flags given on the command line come later and override them.
    std::string defaults[] = {"--benchmark_repetitions=5", "--benchmark_min_time=0.2",
                              "--benchmark_enable_random_interleaving=true",
                              "--benchmark_report_aggregates_only=true"};
    for (auto& d : defaults)
        args.push_back(d.data());
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.starts_with("--sizes-mib=")) {
            sizes_mib.clear();
            for (std::size_t pos = 12; pos <= arg.size();) {
                const std::size_t comma = std::min(arg.find(',', pos), arg.size());
                sizes_mib.push_back(std::stoul(arg.substr(pos, comma - pos)));
                pos = comma + 1;
            }
        } else {
            args.push_back(argv[i]);
        }
    }
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

    try {
        Scratch scratch; // declared first: destroyed after the targets that map its files
        std::vector<std::unique_ptr<TargetTree>> targets;
        std::vector<std::unique_ptr<Subject>> subjects;
        for (std::size_t size : sizes_mib) {
            const std::string tag = std::to_string(size) + "M";
            std::fprintf(stderr, "setting up target with %s mapped...\n", size_label(size).c_str());
            const std::string file = size ? scratch.make_file("data-" + tag, size * mib) : "";
            targets.push_back(std::make_unique<TargetTree>(file, 0));
            subjects.push_back(std::make_unique<Subject>(size_label(size), tag, size * mib,
                                                         targets.back()->leader()));
        }
        check_targets(subjects);
        auto add = [](const Subject& s, const Row& row) {
            benchmark::RegisterBenchmark((s.tag + "/" + row.key).c_str(),
                                         [&s, &row](benchmark::State& st) { row.run(st, s); })
                ->Unit(benchmark::kMicrosecond);
        };
        for (const auto& s : subjects)
            for (const Row& row : rows())
                add(*s, row);
        // The breakdown does not depend on the mapped size: the first (smallest) target is enough.
        if (!subjects.empty())
            for (const Row& row : breakdown_rows())
                add(*subjects.front(), row);

        MedianReporter reporter;
        benchmark::RunSpecifiedBenchmarks(&reporter);
        benchmark::Shutdown();
        std::fflush(stdout);
        const bool complete = print_tables(subjects, reporter);
        subjects.clear();
        targets.clear();
        return complete ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sampler bench: %s\n", e.what());
        return 1;
    }
}
