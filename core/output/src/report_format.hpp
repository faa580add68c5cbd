// SPDX-License-Identifier: MIT
// How the text report writes figures and names processes, shared by its sections.
#pragma once

#include "loaderlens/report.hpp"

#include <string>

namespace loaderlens::report_format {

std::string kib(const Kib& value);
// The tree's shape for the text's summaries: workers, slots and generations (from the highest
// slot and generation seen; 64-bit: a damaged slot may be INT_MAX), helpers.
struct TreeShape {
    int workers = 0, helpers = 0;
    std::int64_t slots = 0, generations = 0;
};
TreeShape tree_shape(const ReportData& r);
std::string seconds(std::int64_t ms);
using loaderlens::process_label; // model's

} // namespace loaderlens::report_format

namespace loaderlens {
// The residency section (report_residency_text.cpp).
void append_residency(std::string& out, const ReportData& r);
// The diagnosis (report_diagnosis_text.cpp).
// The first screen (report_first_screen.cpp): the title, `notices` (how the recording ended),
// the verdict, the scheduler views with their largest holders, who holds what. Laid out for
// `width` columns (0: no limit; narrower than 80: for 80).
void append_first_screen(std::string& out, const ReportData& r, std::size_t width,
                         const std::string& notices);
// Every scheduler view in full: peak, when, the recorder's share, what it counts, SLURM's polls.
void append_scheduler_details(std::string& out, const ReportData& r);
void append_findings(std::string& out, const ReportData& r);
void append_timelines(std::string& out, const ReportData& r);
// As many epoch columns as `width` holds (0: up to eight).
void append_epochs(std::string& out, const ReportData& r, std::size_t width);
// The whole report of a merged recording (report_merged_text.cpp).
// Rows on two lines when `width` is narrower than its wide tables (0: no limit).
void append_merged(std::string& out, const ReportData& r, std::size_t width);
} // namespace loaderlens
