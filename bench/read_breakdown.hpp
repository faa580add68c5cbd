// SPDX-License-Identifier: MIT
// Where a full read of a recording spends its time, table by table: Recording::read_new with a
// cursor that has read every other table already (so it reads that one alone) against SQLite
// stepping through the same table's rows and columns; and the report's work beyond read_all.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace loaderlens::bench {

struct TableCost {
    std::string table;
    std::size_t rows = 0;
    double read_new_ms = 0, sqlite_ms = 0; // medians
};

struct ReadBreakdown {
    std::vector<TableCost> tables; // costliest read_new first
    double read_all_ms = 0, build_report_ms = 0, summarize_residency_ms = 0;
};

ReadBreakdown read_breakdown(const std::string& path, int rounds);
void print_breakdown(const ReadBreakdown& breakdown);

// Peak RSS beside wall time: each reader run alone in a fresh process (this binary run again
// with --peak READER PATH), its ru_maxrss from wait4; SQLite stepping every row is the baseline.
// Readers: sqlite, report, export-csv, read-all.
int run_peak_reader(const std::string& reader, const std::string& path); // in the child
void print_peaks(const std::string& path, int rounds);

} // namespace loaderlens::bench
