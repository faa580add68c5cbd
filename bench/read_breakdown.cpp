// SPDX-License-Identifier: MIT
#include "read_breakdown.hpp"

#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "sqlite_baselines.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

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

} // namespace loaderlens::bench
