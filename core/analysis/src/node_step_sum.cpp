// SPDX-License-Identifier: MIT
// A SLURM step's tasks on one node are held to the step's limit together (notes/kernel-notes.md,
// measured: `srun -n2` killed at the sum while each task held half). Each task has its own
// recorder; the report of one sums the per-process views over the siblings' recordings found
// beside it, on this recording's clock, as merge sums parts (aligned_sum).
#include "diagnosis_parts.hpp"
#include "loaderlens/merged_report.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

namespace loaderlens::diagnosis {

std::vector<std::string> node_task_ids(const std::map<std::string, std::string>& meta) {
    std::vector<std::string> ids;
    auto it = meta.find("slurm_gtids");
    if (it == meta.end()) return ids;
    std::stringstream list(it->second);
    std::string id;
    while (std::getline(list, id, ','))
        if (!id.empty() && id.size() <= 12 &&
            std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
            ids.push_back(id);
    return ids;
}

void node_sums(const RecordingData& data, const DiagnosisOptions& options, const ReportData* report,
               std::vector<SchedulerView>& views) {
    // A task's processes held their last figures until its end; a cut recording's end is not
    // known (the step's kill ended it with its siblings): it counts until the others end.
    constexpr std::int64_t open_end = std::numeric_limits<std::int64_t>::max() / 2;
    const bool own_cut = report && report->end.state == RecordingEnd::State::cut;
    const std::int64_t duration_ms = report ? report->duration_ms : 0;
    const std::size_t tasks = node_task_ids(data.meta).size();
    if (tasks < 2) return;
    for (SchedulerView& view : views) {
        if (view.key != "slurm_linux" && view.key != "slurm_usepss" && view.key != "slurm_noshared")
            continue;
        SchedulerView::NodeSum sum;
        sum.tasks = static_cast<int>(tasks);
        sum.recorded = 1;
        std::vector<PartSeries> parts{
            {view.points, 0, own_cut ? open_end : std::max(duration_ms, view.peak_ms)}};
        // A recorder killed with its step left no size: it counts 0, as in the views.
        Kib recorders = view.recorder_kb;
        for (const TaskOnNode& sibling : options.siblings) {
            auto other = std::find_if(sibling.views.begin(), sibling.views.end(),
                                      [&](const SchedulerView& s) { return s.key == view.key; });
            if (other == sibling.views.end()) continue;
            ++sum.recorded;
            PartSeries part{other->points, sibling.offset_ms,
                            sibling.cut ? open_end
                                        : saturating_add(sibling.offset_ms, sibling.duration_ms)};
            for (SeriesPoint& p : part.points)
                p.t_ms = saturating_add(p.t_ms, sibling.offset_ms);
            parts.push_back(std::move(part));
            if (other->recorder_kb)
                recorders = saturating_add(recorders.value_or(0), *other->recorder_kb);
        }
        sum.points = aligned_sum(parts);
        for (const SeriesPoint& p : sum.points)
            if (p.value && (!sum.peak || *p.value > *sum.peak)) {
                sum.peak = p.value;
                sum.peak_ms = p.t_ms;
            }
        sum.recorders_kb = recorders;
        if (sum.peak && sum.recorded == sum.tasks) {
            sum.counted_kb = saturating_add(*sum.peak, sum.recorders_kb.value_or(0));
            if (view.limit.kb) sum.margin_kb = saturating_sub(*view.limit.kb, *sum.counted_kb);
        }
        view.node = std::move(sum);
    }
}

} // namespace loaderlens::diagnosis

namespace loaderlens {

Kib SchedulerView::judged_counted_kb() const {
    return node && node->counted_kb ? node->counted_kb : counted_kb;
}

Kib SchedulerView::judged_margin_kb() const {
    return node && node->counted_kb ? node->margin_kb : margin_kb;
}

} // namespace loaderlens
