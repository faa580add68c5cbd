// SPDX-License-Identifier: MIT
// The comparisons of tests/consumers_agree.cpp, one per consumer, shared with the merged
// recordings' part-by-part comparison (tests/consumers_agree_merged.cpp).
#pragma once

#include "consumers_agree.hpp"
#include "consumers_agree_parse.hpp"

#include <string>
#include <vector>

namespace loaderlens::test::consumers_agree {

// The figures the CLI's outputs give of one recording (or of one part of a merged one).
struct Outputs {
    std::string text;
    json report, exported; // exported: null for a part (export has no --part)
    std::vector<std::string> csv;
    std::vector<MetricLine> metrics;
    std::string check;
    bool report_limit = false; // `report --mem-limit` was given
    bool merged = false;       // a merged recording (its job-level sums)
};

// Runs a CLI command and requires exit 0; its stdout.
std::string cli_out(const std::vector<std::string>& argv);

void text_against_json(const Outputs& o, Compare& c);
void export_json_against_report(const Outputs& o, Compare& c);
void csv_against(const Outputs& o, Compare& c);
void openmetrics_against(const Outputs& o, Compare& c);
// A budget with a rule for every figure `check` shares with the report (and with the reports of a
// merged recording's `parts`: their files), all far above.
std::string budget_for(const json& r, const ConsumersAgreeOptions& options,
                       const std::vector<json>& parts = {});
void check_against(const Outputs& o, Compare& c);

// A merged recording (report --json has "merged"): its job totals and parts tables against the
// JSON, then each part as its own recording: `report --part NAME` (text and JSON), the
// OpenMetrics lines of that node and task, and `check`'s lines named after the part.
void merged_against_parts(const std::string& recording, const Outputs& o, Compare& c);

} // namespace loaderlens::test::consumers_agree
