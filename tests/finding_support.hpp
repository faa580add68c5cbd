// SPDX-License-Identifier: MIT
// Looking up a report's findings in tests: by kind, and all kinds in one line for a message.
#pragma once

#include "loaderlens/report.hpp"

#include <string>
#include <vector>

namespace loaderlens::test {

inline std::vector<const Finding*> of_kind(const ReportData& report, const std::string& kind) {
    std::vector<const Finding*> out;
    for (const Finding& f : report.diagnosis.findings)
        if (f.kind == kind) out.push_back(&f);
    return out;
}

// "shared_file_cache per_generation_reset ": every finding's kind, most severe first.
inline std::string kinds(const ReportData& report) {
    std::string out;
    for (const Finding& f : report.diagnosis.findings)
        out += f.kind + " ";
    return out;
}

} // namespace loaderlens::test
