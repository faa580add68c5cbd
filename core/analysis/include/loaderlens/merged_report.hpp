// SPDX-License-Identifier: MIT
// The report of a merged recording (`loaderlens merge`, docs/merge.md): each part's ordinary
// report, built from that part's rows alone on its own clock, and the job's totals: for each
// scheduler view, the sum over the parts of the view's value at each tick of any part, on the
// job's time axis (a part counts with its latest value at or before the tick while the tick is
// within its run, and not at all outside it), its peak, the part that peaked first and the part
// with the highest peak. SLURM and Kubernetes enforce their limits per node (per step on a node,
// per pod): the totals are what the job holds across its nodes, never held against a limit.
#pragma once

#include "loaderlens/report.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loaderlens {

struct PartReport {
    RecordingPart part;
    ReportData report; // on the part's own clock: add part.offset_ms for the job's axis
};

struct JobTotal {
    // key, name, counts, source, at_limit as the parts' view; points: the sums (job's axis),
    // partial where a part in its run had no value; peak, peak_ms; no limit. recorder_kb: the
    // recorders' shares of the parts in their run at the peak (each recorder is a process of its
    // step: SLURM counts it), counted_kb = peak + them; a cgroup view has them in the figure.
    SchedulerView view;
    std::string first_peak_part; // the part whose own peak came first on the job's axis
    std::int64_t first_peak_ms = 0;
    std::string highest_part; // the part with the highest own peak (the first of equal ones)
    Kib highest_kb;
};

struct MergedReport {
    std::vector<PartReport> parts; // in start order
    std::vector<JobTotal> totals;  // one per scheduler view, in the views' order
    // The part named `name`, or null.
    const PartReport* part(const std::string& name) const;
};

// One part's series on the job's time axis, and the span of its run.
struct PartSeries {
    std::vector<SeriesPoint> points; // in time order
    std::int64_t from_ms = 0, to_ms = 0;
};

// Σ over the parts at each tick of any part (see above); a tick where every part in its run had
// no value has no value.
std::vector<SeriesPoint> aligned_sum(const std::vector<PartSeries>& parts);

// Each part's rows of a merged recording's, times back on the part's own clock, with its meta.
// Rows that name a part the recording does not hold are damage: RecordingError naming `path`.
std::vector<std::pair<RecordingPart, RecordingData>> split_parts(const RecordingData& merged,
                                                                 const std::string& path);

// One part's rows (Recording::read_part) on the part's own clock, with its own meta and its
// loader's account: what its input held, for its ordinary report.
RecordingData on_part_clock(RecordingData rows, const RecordingPart& part);

// The job's report of a merged recording, read one part at a time (build_report(Recording) calls
// this when the recording has parts).
ReportData build_merged_report(const Recording& recording, const DiagnosisOptions& options = {});
// The ordinary report of the part named `name` alone (report --part), or nothing: no such part.
std::optional<ReportData> build_part_report(const Recording& recording, const std::string& name,
                                            const DiagnosisOptions& options = {});

// A part's scheduler views (on its own clock), its part (for the offset and the run), and the
// cgroup its recorder read: "" when none.
struct PartViews {
    const RecordingPart* part = nullptr;
    const std::vector<SchedulerView>* views = nullptr;
    std::string cgroup; // the path of its last cgroup sample
};

// The job totals of the scheduler views over `parts`. Parts on one node (host) that read one
// cgroup (tasks of a step sharing the step's cgroup) count that cgroup once in the cgroup views:
// their readings of it are one series, the latest reading of any of them at each tick.
std::vector<JobTotal> job_totals(const std::vector<PartViews>& parts);
// The cgroup a part's rows read (the path of its last cgroup sample), or "".
std::string cgroup_of(const RecordingData& rows);
// The scheduler views' series for the export: scheduler_series() of an ordinary recording; of a
// merged one, the job totals (`path` names it in a RecordingError).
std::vector<SchedulerView> job_scheduler_series(const RecordingData& data, const std::string& path);
// A figure summed over the tree per tick: series() of an ordinary recording; of a merged one,
// the sum over its parts as above.
Series tree_series(const RecordingData& data, Figure figure, const std::string& path);

} // namespace loaderlens
