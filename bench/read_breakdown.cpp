// SPDX-License-Identifier: MIT
#include "read_breakdown.hpp"

#include "loaderlens/export.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "sqlite_baselines.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace loaderlens::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

template <typename Work> double median_ms(int rounds, Work&& work) {
    std::vector<double> ms;
    for (int i = 0; i < rounds; ++i) {
        const auto start = Clock::now();
        work();
        ms.push_back(ms_since(start));
    }
    return median(std::move(ms));
}

// A cursor past the end of every table but `table`: read_new then reads that one alone (and the
// meta table, which every read takes whole; a residency table also needs residency_files).
Cursor reading_only(const std::string& table, const std::vector<std::string>& tables) {
    constexpr auto past_everything = std::numeric_limits<std::int64_t>::max();
    Cursor cursor;
    for (const std::string& t : tables)
        if (t != table) cursor.read_up_to[t] = past_everything;
    if (table != "processes") cursor.process_revision = past_everything;
    if (table == "cache_residency" || table == "mapped_residency")
        cursor.read_up_to.erase("residency_files");
    return cursor;
}

} // namespace

ReadBreakdown read_breakdown(const std::string& path, int rounds) {
    ReadBreakdown out;
    const Recording recording(path);
    SqliteHandle db = open_read_only(path);
    const std::vector<std::string> tables = table_names(db.get());
    for (const std::string& table : tables) {
        if (table == "meta") continue;
        TableCost cost{table};
        cost.read_new_ms = median_ms(rounds, [&] {
            Cursor cursor = reading_only(table, tables);
            (void)recording.read_new(cursor);
        });
        cost.sqlite_ms = median_ms(rounds, [&] { cost.rows = step_table(db.get(), table).rows; });
        out.tables.push_back(cost);
    }
    std::sort(out.tables.begin(), out.tables.end(),
              [](const TableCost& a, const TableCost& b) { return a.read_new_ms > b.read_new_ms; });
    RecordingData data;
    out.read_all_ms = median_ms(rounds, [&] { data = recording.read_all(); });
    out.build_report_ms = median_ms(rounds, [&] { (void)build_report(recording); });
    out.summarize_residency_ms =
        median_ms(rounds, [&] { (void)summarize_residency(recording, data, {}); });
    return out;
}

void print_breakdown(const ReadBreakdown& b) {
    std::printf("\nwhere the full read goes, table by table (medians):\n");
    std::printf("  %-18s %9s %14s %14s %8s %10s\n", "table", "rows", "read_new alone",
                "SQLite step", "ratio", "µs per row");
    for (const TableCost& t : b.tables) {
        if (t.rows == 0) continue;
        std::printf("  %-18s %9zu %11.1f ms %11.1f ms %7.2fx %10.3f\n", t.table.c_str(), t.rows,
                    t.read_new_ms, t.sqlite_ms, t.read_new_ms / std::max(t.sqlite_ms, 1e-3),
                    t.read_new_ms * 1000 / static_cast<double>(t.rows));
    }
    std::printf("  read_all %.0f ms; build_report %.0f ms (%.0f ms beyond read_all, of which "
                "summarize_residency %.0f ms)\n",
                b.read_all_ms, b.build_report_ms, b.build_report_ms - b.read_all_ms,
                b.summarize_residency_ms);
}

int run_peak_reader(const std::string& reader, const std::string& path) {
    if (reader == "sqlite") {
        SqliteHandle db = open_read_only(path);
        return step_every_row(db.get()).rows > 0 ? 0 : 1;
    }
    const Recording recording(path);
    if (reader == "report") return build_report(recording).processes.empty() ? 1 : 0;
    if (reader == "read-all") return recording.read_all().fast.empty() ? 1 : 0;
    if (reader == "export-csv") {
        std::ofstream out("/dev/null");
        export_csv(recording, out);
        return out ? 0 : 1;
    }
    return 2;
}

namespace {

struct PeakRun {
    double ms = 0;
    long max_rss_kib = -1; // -1: the run failed
};

PeakRun spawn_peak(const std::string& reader, const std::string& path) {
    const auto start = Clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const char* argv[] = {"loaderlens_bench_reading", "--peak", reader.c_str(), path.c_str(),
                              nullptr};
        ::execv("/proc/self/exe", const_cast<char* const*>(argv));
        ::_exit(127);
    }
    PeakRun run;
    int status = 0;
    rusage usage{};
    if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0)
        run.max_rss_kib = usage.ru_maxrss;
    run.ms = ms_since(start);
    return run;
}

} // namespace

void print_peaks(const std::string& path, int rounds) {
    std::printf("\n## each reader alone in a fresh process: wall time and peak RSS, median of %d "
                "(ratios to SQLite stepping every row, same run)\n",
                rounds);
    std::printf("| reader | wall | peak RSS | wall / SQLite's | RSS / SQLite's |\n"
                "|---|---|---|---|---|\n");
    double base_ms = 0, base_kib = 0;
    for (const char* reader : {"sqlite", "report", "export-csv", "read-all"}) {
        std::vector<double> ms, kib;
        for (int i = 0; i < rounds; ++i) {
            const PeakRun run = spawn_peak(reader, path);
            if (run.max_rss_kib < 0) {
                std::printf("| %s | unavailable: the run failed | | | |\n", reader);
                ms.clear();
                break;
            }
            ms.push_back(run.ms);
            kib.push_back(static_cast<double>(run.max_rss_kib));
        }
        if (ms.empty()) continue;
        const double m = median(ms), k = median(kib);
        if (std::string(reader) == "sqlite") base_ms = m, base_kib = k;
        std::printf("| %s | %.0f ms | %.1f MiB | %.2fx | %.1fx |\n", reader, m, k / 1024,
                    base_ms > 0 ? m / base_ms : 0, base_kib > 0 ? k / base_kib : 0);
    }
}

} // namespace loaderlens::bench
