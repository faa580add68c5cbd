// SPDX-License-Identifier: MIT
// What the budget rules and the baseline comparison share (private to the analysis layer):
// peaks after the warm-up, a mapped file's peaks, growth after the warm-up epochs, and filling in
// a result.
#pragma once

#include "loaderlens/budget.hpp"
#include "loaderlens/figure_model.hpp"

#include <functional>

namespace loaderlens::budget_rules {

// "12.4 s"
std::string seconds(std::int64_t ms);

// The highest value at or after `from_ms` and its tick (empty: none).
std::pair<Kib, std::int64_t> peak_after(const std::vector<SeriesPoint>& points,
                                        std::int64_t from_ms);

// A size measured against a size limit: pass when measured <= limit.
void sized(RuleResult& r, std::int64_t measured_kb, std::int64_t limit_kb);
void unavailable(RuleResult& r, const std::string& why);
// A rule that passes when nothing was found; what was found is listed in `where`.
void listed(RuleResult& r, const std::vector<std::string>& found);

// Who held `selected` at tick `t`: the selection's name and the process alive then.
std::string holder(const ReportData& report, const Selector& selected, const std::string& name,
                   std::int64_t t);

struct TimedPeak {
    Kib kb;
    std::int64_t t_ms = 0;
    std::string where;                      // the file(s)
    std::optional<std::int64_t> process_id; // process_rss: the process
};
struct FilePeaks {
    TimedPeak rss, pss, process_rss, cached;
};
// Σ RSS and Σ PSS over the tree of the mapped files `matches` takes, per tick of one source
// (`model`'s per-file sums: a maps tick, smaps; a residency tick, pagemap), the highest; the most
// one process held; their page cache per residency tick. Ticks before `from_ms` are left out.
FilePeaks file_peaks(const RecordingData& data, const FigureModel& model,
                     const std::function<bool(const std::string&)>& matches, std::int64_t from_ms);

// A figure's mean growth per epoch over the epochs after `warmup_epochs` (from the end of the
// last warm-up epoch, or of the first epoch without warm-up); empty with fewer than two ends.
std::optional<std::int64_t> growth_after(const GrowthFigure& figure, int warmup_epochs);

} // namespace loaderlens::budget_rules
