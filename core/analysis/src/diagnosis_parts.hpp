// SPDX-License-Identifier: MIT
// The parts diagnose() is made of, each in the file named after it: scheduler views and the
// limit (scheduler_views.cpp), epochs and growth (epoch_growth.cpp), the RSS-PSS gap
// (gap_shares.cpp), and the findings (findings_*.cpp). Internal to the analysis layer.
#pragma once

#include "loaderlens/diagnosis.hpp"
#include "loaderlens/figure_model.hpp"
#include "loaderlens/report.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>

namespace loaderlens::diagnosis {

// The figure model (figure_model.hpp) holds each process's rows of the fast and rollup tables as
// indices in time order; the parts below take it under this name.
using ProcessRows = FigureModel;

// A process's figure at its last tick in [from_ms, to_ms] where the figure was read (empty: none).
struct TimedValue {
    std::int64_t t_ms = 0;
    std::int64_t kb = 0;
    std::int64_t age_ms = 0; // 0: read at t_ms; else carried from a reading this old
};
std::optional<TimedValue> last_value(const RecordingData& data, const ProcessRows& rows,
                                     std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                     std::int64_t to_ms);
std::optional<TimedValue> first_value(const RecordingData& data, const ProcessRows& rows,
                                      std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                      std::int64_t to_ms);

// The gap between RSS and PSS at a rollup tick, by cause: per process, RssAnon - Pss_Anon,
// RssShmem - Pss_Shmem and RssFile - Pss_File (RSS split from the fast tier's row at or just
// before the tick).
struct CauseGaps {
    std::int64_t anon = 0, shmem = 0, file = 0;
    std::unordered_map<std::int64_t, std::int64_t> anon_by_process;
};

// Everything a rule may look at.
struct Context {
    const RecordingData& data;
    const ReportData& report;
    const ProcessRows& rows;
    const Diagnosis& diagnosis; // schedulers, limit, epochs, growth and gap already filled in
    const CauseGaps& gaps;      // at diagnosis.gap_ms (all 0 without a rollup tick)
};

MemoryLimit resolve_limit(const RecordingData& data, const DiagnosisOptions& options);
// The recorder's own size from the meta (written every second and at the end).
void read_recorder_size(const RecordingData& data, Diagnosis& diagnosis);
// `report` gives the tiers' intervals (none: 0).
std::vector<SchedulerView> scheduler_views(const RecordingData& data, const ReportData* report,
                                           const Diagnosis& diagnosis,
                                           const DiagnosisOptions& options);
// SLURM's polls of `points` every `period_s` (SchedulerView::Polled); `over_kb`: the figure above
// which a poll sees the counted figure over the limit.
std::optional<SchedulerView::Polled> polled_peak(const std::vector<SeriesPoint>& points,
                                                 int period_s, const Kib& over_kb);
// The SLURM_PROCIDs of the step's tasks on this node (meta slurm_gtids); one or none: alone.
std::vector<std::string> node_task_ids(const std::map<std::string, std::string>& meta);
// Fills SchedulerView::node of the per-process views of one of several tasks on its node.
void node_sums(const RecordingData& data, const DiagnosisOptions& options, const ReportData* report,
               std::vector<SchedulerView>& views);
std::vector<Epoch> find_epochs(const RecordingData& data, std::string& source);
// The data files of the run: those the residency tier followed (it never follows a file mapped
// executable, nor system data); without residency rows, the mapped files that are not code
// (ObjectInfo::is_code).
std::set<std::string> data_files(const RecordingData& data);
std::vector<SlotGrowth> slot_growth(const RecordingData& data, const ProcessRows& rows,
                                    const std::vector<Epoch>& epochs, std::int64_t end_ms);
std::vector<SlotTimeline> slot_timelines(const RecordingData& data, const ProcessRows& rows,
                                         std::int64_t end_ms, int columns);
// At the rollup tick with the widest Σ RSS - Σ PSS: fills diagnosis.gap, gap_ms, gap_total_kb
// and returns the gaps by cause and process.
CauseGaps gap_shares(const RecordingData& data, const ProcessRows& rows, Diagnosis& diagnosis);

// The rules, each appending what it found.
void sharing_findings(const Context& context, std::vector<Finding>& out);
void growth_findings(const Context& context, std::vector<Finding>& out);
void loader_findings(const Context& context, std::vector<Finding>& out);
void limit_findings(const Context& context, std::vector<Finding>& out);
void hdf5_findings(const Context& context, std::vector<Finding>& out);
// A step killed outright (a cut recording without a signal) near the limit of the figure in force.
void kill_findings(const Context& context, std::vector<Finding>& out);

// "12.3 MiB" and friends, for evidence lines.
std::string size_text(std::int64_t kb);
// A whole number in meta (SLURM writes memory in MiB, a bare number; "M" is accepted too).
std::optional<std::int64_t> meta_number(const RecordingData& data, const std::string& key);
// A meta value as written; empty when the key is absent.
std::string meta_text(const std::map<std::string, std::string>& meta, const std::string& key);
// The reference loader's configuration (its config event): an object, empty when there is none.
// A field the analysis reads is kept only with the type the loader writes: a damaged recording's
// "read": [] stopped `report` with a JSON type error (fuzz_recordings).
nlohmann::json loader_config(const RecordingData& data);

} // namespace loaderlens::diagnosis
