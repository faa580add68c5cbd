// SPDX-License-Identifier: MIT
// How the text report writes figures and names processes, shared by its sections.
#pragma once

#include "loaderlens/report.hpp"

#include <string>

namespace loaderlens::report_format {

std::string kib(const Kib& value);
std::string seconds(std::int64_t ms);
using loaderlens::process_label; // model's

} // namespace loaderlens::report_format

namespace loaderlens {
// The residency section (report_residency_text.cpp).
void append_residency(std::string& out, const ReportData& r);
// The diagnosis (report_diagnosis_text.cpp).
void append_verdict(std::string& out, const ReportData& r);
void append_findings(std::string& out, const ReportData& r);
void append_timelines(std::string& out, const ReportData& r);
void append_epochs(std::string& out, const ReportData& r);
// The whole report of a merged recording (report_merged_text.cpp).
void append_merged(std::string& out, const ReportData& r);
} // namespace loaderlens
