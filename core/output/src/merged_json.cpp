// SPDX-License-Identifier: MIT
#include "merged_json.hpp"

#include "json_util.hpp"

namespace loaderlens::json_util {

namespace {

using nlohmann::json;

// A SLURM id as its meta held it (a string), null when the recording had none.
json id_or_null(const std::string& id) {
    return id.empty() ? json(nullptr) : json(id);
}

json part_json(const PartReport& p) {
    const RecordingPart& part = p.part;
    json schedulers = json::array();
    for (const SchedulerView& v : p.report.diagnosis.schedulers)
        schedulers.push_back(
            {{"key", v.key},
             {"peak_kib", optional(v.peak)},
             // On the job's axis, as every time under "merged".
             {"peak_ms", v.peak ? json(saturating_add(v.peak_ms, part.offset_ms)) : json(nullptr)},
             {"limit_kib", optional(v.limit.kb)},
             {"limit_source", v.limit.kb ? json(v.limit.source) : json(nullptr)},
             {"margin_kib", optional(v.margin_kb)}});
    json findings = json::array();
    for (const Finding& f : p.report.diagnosis.findings)
        findings.push_back(f.kind);
    return {
        {"id", part.id},
        {"name", part.name},
        {"host", part.host},
        {"job", id_or_null(part.job)},
        {"step", id_or_null(part.step)},
        {"task", id_or_null(part.task)},
        {"source", part.source},
        {"schema", part.schema},
        {"start_unix_ns", part.start_unix_ns},
        {"offset_ms", part.offset_ms},
        {"duration_ms", part.duration_ms},
        {"last_sample_ms", part.last_sample_ms >= 0 ? json(part.last_sample_ms) : json(nullptr)},
        {"end", part.end_state},
        {"processes", p.report.processes.size()},
        {"schedulers", std::move(schedulers)},
        {"findings", std::move(findings)}};
}

} // namespace

json merged_json(const MergedReport& merged) {
    json parts = json::array();
    for (const PartReport& p : merged.parts)
        parts.push_back(part_json(p));
    json totals = json::array();
    for (const JobTotal& t : merged.totals)
        totals.push_back(
            {{"key", t.view.key},
             {"name", t.view.name},
             {"peak_kib", optional(t.view.peak)},
             {"peak_ms", t.view.peak ? json(t.view.peak_ms) : json(nullptr)},
             // The recorders of the parts in their run at the peak, and peak + them: what SLURM
             // counted for the job (docs/merge.md); a cgroup view has them in the figure.
             {"recorder_kib", optional(t.view.recorder_kb)},
             {"recorder_in_figure", t.view.recorder_in_figure},
             {"counted_kib", optional(t.view.counted_kb)},
             {"samples", t.view.samples},
             {"first_peak_part",
              t.first_peak_part.empty() ? json(nullptr) : json(t.first_peak_part)},
             {"first_peak_ms", t.first_peak_part.empty() ? json(nullptr) : json(t.first_peak_ms)},
             {"highest_part", t.highest_part.empty() ? json(nullptr) : json(t.highest_part)},
             {"highest_kib", optional(t.highest_kb)}});
    return {{"clock", {{"aligned_on", "start_unix_ns"}, {"skew_measured", false}}},
            {"parts", std::move(parts)},
            {"totals", std::move(totals)}};
}

} // namespace loaderlens::json_util
