// SPDX-License-Identifier: MIT
// How the text report writes figures and names processes, shared by its sections.
#pragma once

#include "loaderlens/report.hpp"

#include <string>

namespace loaderlens::report_format {

std::string kib(const Kib& value);
std::string seconds(std::int64_t ms);
std::string process_label(const ProcessInfo& p);

} // namespace loaderlens::report_format

namespace loaderlens {
// An epoch's duration and rates, for the text and the JSON report. Its times come from the
// recording, which may hold any value: the difference saturates (LoaderEpoch::seconds()
// subtracts them in int64, where overflow is undefined behaviour).
struct EpochRates {
    explicit EpochRates(const LoaderEpoch& e)
        : duration_ms(saturating_sub(e.end_ms, e.start_ms)),
          samples_per_second(per_second(static_cast<double>(e.samples))),
          mib_per_second(per_second(static_cast<double>(e.bytes_read) / (1 << 20))) {}
    std::int64_t duration_ms;
    double samples_per_second, mib_per_second;

  private:
    double per_second(double amount) const {
        return duration_ms > 0 ? amount * 1000.0 / static_cast<double>(duration_ms) : 0.0;
    }
};
} // namespace loaderlens

namespace loaderlens {
// The residency section (report_residency_text.cpp).
void append_residency(std::string& out, const ReportData& r);
} // namespace loaderlens
