// SPDX-License-Identifier: MIT
#include "diagnosis_json.hpp"
#include "json_util.hpp"
#include "loaderlens/format_version.hpp"
#include "loaderlens/report.hpp"
#include "merged_json.hpp"
#include "report_format.hpp"
#include "residency_json.hpp"

#include <sys/wait.h>

namespace loaderlens {

namespace {

using nlohmann::json;

json kib(const Kib& value) {
    return value ? json(*value) : json(nullptr);
}
json peak(const Peak& p) {
    return {{"kib", kib(p.value)}, {"t_ms", p.value ? json(p.t_ms) : json(nullptr)}};
}

// How the process ended: "running" (at the end of the recording, or now for one being written),
// "cut" (no exit seen before the recording was cut: it ran at least until last_seen_ms), "exit"
// (exit_code) or "killed" (exit_signal) when its status is known, "exit_not_seen" when it is gone
// but its status could not be seen (not our child, and it exited between two scans).
json end_json(const ProcessInfo& p, const RecordingEnd& end) {
    json out{{"end", "running"}, {"exit_code", nullptr}, {"exit_signal", nullptr}};
    if (!p.exit_ms) {
        if (end.state == RecordingEnd::State::cut) out["end"] = "cut";
        return out;
    }
    if (!p.exit_status) {
        out["end"] = "exit_not_seen";
    } else if (WIFSIGNALED(*p.exit_status)) {
        out["end"] = "killed";
        out["exit_signal"] = WTERMSIG(*p.exit_status);
    } else {
        out["end"] = "exit";
        out["exit_code"] = WEXITSTATUS(*p.exit_status);
    }
    return out;
}

json cut_json(const RecordingEnd& e) {
    if (e.state != RecordingEnd::State::cut) return nullptr;
    return {{"last_sample_ms", e.last_sample_ms >= 0 ? json(e.last_sample_ms) : json(nullptr)},
            {"signal", e.signal ? json(*e.signal) : json(nullptr)},
            {"signal_ms", e.signal_ms ? json(*e.signal_ms) : json(nullptr)}};
}

json process_json(const ProcessSummary& p, const RecordingEnd& end) {
    json out = json_util::process_identity(p.info);
    out.update(end_json(p.info, end));
    out.update({
        {"last_seen_ms", json_util::optional(p.last_seen_ms)},
        {"peak_rss", peak(p.rss)},
        {"peak_pss", peak(p.pss)},
        {"peak_uss", peak(p.uss)},
        {"final_kib",
         {{"rss", kib(p.final_rss)},
          {"pss", kib(p.final_pss)},
          {"uss", kib(p.final_uss)},
          {"anon", kib(p.final_anon)},
          {"file", kib(p.final_file)},
          {"shmem", kib(p.final_shmem)},
          {"swap", kib(p.final_swap)}}},
        {"final_pss_age_ms", p.final_pss_age_ms},
        {"final_uss_age_ms", p.final_uss_age_ms},
    });
    return out;
}

} // namespace

std::string render_report_json(const ReportData& r) {
    json out;
    out["format_version"] = format_version::report;
    out["recording"] = r.path;
    // Unix time of t_ms 0: every *_ms / t_ms below is an offset from it (docs/report-json.md).
    const auto started = json_util::start_unix_ns(r.meta);
    out["started_unix_ns"] = started ? json(*started) : json(nullptr);
    out["meta"] = r.meta;
    out["finished"] = r.finished;
    out["being_written"] = r.end.state == RecordingEnd::State::being_written;
    out["cut"] = cut_json(r.end); // null unless the recorder stopped without finishing
    out["missing_wal"] = r.missing_wal.empty() ? json(nullptr) : json(r.missing_wal);
    out["duration_ms"] = r.duration_ms;
    out["processes"] = json::array();
    for (const auto& p : r.processes)
        out["processes"].push_back(process_json(p, r.end));
    const ProcessesMissed& missed = r.processes_missed;
    out["processes_missed"] = {
        {"count", missed.missed ? json(*missed.missed) : json(nullptr)},
        {"born_counted", missed.born ? json(*missed.born) : json(nullptr)},
        {"at_least", missed.at_least},
        {"unavailable", missed.unavailable.empty() ? json(nullptr) : json(missed.unavailable)}};
    out["files_unavailable"] = json::array();
    for (const auto& u : r.files_unavailable)
        out["files_unavailable"].push_back({{"process_id", u.process_id}, {"reason", u.reason}});
    out["files"] = json::array();
    for (const auto& f : r.files) {
        json per = json::array();
        for (const auto& p : f.processes)
            per.push_back({{"process_id", p.process_id},
                           {"peak_rss", peak(p.rss)},
                           {"peak_pss", peak(p.pss)}});
        out["files"].push_back({{"path", f.object.path},
                                {"inode", f.object.inode},
                                {"kind", to_string(f.object.kind)},
                                {"size_bytes", kib(f.object.size_bytes)},
                                {"tree_peak_rss", peak(f.total_rss)},
                                {"tree_peak_pss", peak(f.total_pss)},
                                {"processes", per}});
    }
    const auto& t = r.totals;
    out["totals"] = {{"peak_sum_rss", peak(t.rss)},
                     {"peak_sum_pss", peak(t.pss)},
                     {"peak_sum_uss", peak(t.uss)},
                     {"cgroup_peak_usage", peak(t.cgroup_usage)},
                     {"cgroup_limit_kib", kib(t.cgroup_limit)},
                     {"cgroup_unlimited", t.cgroup_unlimited},
                     {"cgroup_version", t.cgroup_version},
                     {"cgroup_path", t.cgroup_path},
                     {"cgroup_oom_kills", kib(t.oom_kills)},
                     {"pss_uss_unreadable_processes", t.rollup_unreadable}};
    out["tiers"] = json::array();
    for (const auto& s : r.tiers)
        out["tiers"].push_back({{"tier", s.tier},
                                {"nominal_ms", s.nominal_ms},
                                {"longest_ms", s.longest_ms},
                                {"last_ms", s.last_ms},
                                {"cpu_us_per_run", s.cpu_us_per_run},
                                {"rows", s.rows},
                                {"kept_rows", s.kept_rows},
                                {"composite_rows", s.composite_rows},
                                {"oldest_composite_ms", s.oldest_composite_ms},
                                {"oldest_kept_ms", s.oldest_kept_ms}});
    out["markers"] = json::array();
    for (const auto& m : r.markers)
        out["markers"].push_back({{"t_ms", m.t_ms}, {"source", m.source}, {"text", m.text}});
    out["residency"] = json::array();
    for (const auto& f : r.residency)
        out["residency"].push_back(json_util::residency_summary(f));
    if (!r.loader.empty()) {
        // Bounded in depth and size (Recording::loader_run checked it): it is dumped whole below.
        json config = json_util::loader_config(r.loader.config_json);
        json loader{{"config", config.is_null() ? json::object() : std::move(config)},
                    {"status", r.loader.status},
                    {"message", r.loader.message},
                    {"epochs", json::array()},
                    {"workers", json::array()}};
        for (const LoaderEpoch& e : r.loader.epochs) {
            loader["epochs"].push_back({{"epoch", e.epoch},
                                        {"generation", e.generation},
                                        {"start_ms", e.start_ms},
                                        {"end_ms", e.end_ms},
                                        {"samples", e.samples},
                                        {"batches", e.batches},
                                        {"bytes_read", e.bytes_read},
                                        {"samples_per_s", e.samples_per_second()},
                                        {"mib_per_s", e.mib_per_second()}});
        }
        for (const LoaderWorker& w : r.loader.workers)
            loader["workers"].push_back({{"worker", w.worker},
                                         {"generation", w.generation},
                                         {"epoch", w.epoch},
                                         {"pid", w.pid},
                                         {"t_ms", w.t_ms}});
        for (const LoaderProgress& p : r.loader.progress)
            loader["progress"].push_back({{"t_ms", p.t_ms},
                                          {"epoch", p.epoch},
                                          {"generation", p.generation},
                                          {"bytes_read", p.bytes_read},
                                          {"distinct_bytes", p.distinct_bytes},
                                          {"worker_distinct_bytes", p.worker_distinct_bytes}});
        out["loader"] = std::move(loader);
    }
    json_util::add_diagnosis(out, r.diagnosis);
    out["unavailable"] = json::array();
    for (const auto& [tm, u] : r.unavailable)
        out["unavailable"].push_back(
            {{"t_ms", tm}, {"process_id", u.process_id}, {"tier", u.tier}, {"reason", u.reason}});
    if (!r.part.empty()) out["part"] = r.part; // report --part: one part of a merged recording
    // A merged recording: its parts and the job's totals (times on the job's axis).
    out["merged"] = r.merged ? json_util::merged_json(*r.merged) : json(nullptr);
    // comm is cut at 15 bytes (maybe inside a UTF-8 character), paths may be Latin-1:
    // replace bad bytes, never fail the whole output.
    return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace loaderlens
