// SPDX-License-Identifier: MIT
// The run summary that `report` prints: per process, per mapped file and for the whole tree.
// Built from a Recording by pure functions; rendered as text or JSON.
#pragma once

#include "loaderlens/diagnosis.hpp"
#include "loaderlens/recording.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loaderlens {

struct Peak {
    Kib value;
    std::int64_t t_ms = 0;
    void offer(const Kib& candidate, std::int64_t t) {
        if (candidate && (!value || *candidate > *value)) {
            value = candidate;
            t_ms = t;
        }
    }
};

struct ProcessSummary {
    ProcessInfo info;
    Peak rss, pss, uss;
    Kib final_rss, final_pss, final_uss;
    Kib final_anon, final_file, final_shmem, final_swap;
    std::int64_t final_pss_age_ms = 0; // 0: read at its last rollup sample; else kept that long
    // The final USS is the last reading that had one (a composite row has none): its age at the
    // process's last rollup sample (RollupCarry).
    std::int64_t final_uss_age_ms = 0;
    // Its last fast or rollup sample: where a recording was cut, the latest time it is known to
    // have run (empty: never sampled).
    std::optional<std::int64_t> last_seen_ms;
};

struct FileSummary {
    ObjectInfo object;
    struct PerProcess {
        std::int64_t process_id = 0;
        Peak rss, pss;
    };
    std::vector<PerProcess> processes; // in process id order
    Peak total_pss, total_rss;         // sums over the tree at one maps sample
};

// Residency of one file against the loader's reads at one residency sample (replay only).
struct ResidencyCheckpoint {
    std::int64_t t_ms = 0;
    double read_fraction = 0;   // distinct bytes the loader had read / file size
    double cached_fraction = 0; // page cache / file size
    // Page cache gained since before the run / distinct bytes read (readahead amplification).
    std::optional<double> cache_amplification;
    // Mean over the workers of their present pages of the file, as a share of the file, and
    // of (present bytes / bytes that worker read): fault-around and large-folio amplification.
    std::optional<double> worker_mapped_fraction, worker_mapped_amplification;
};

// Page-cache residency of a file and each process's present pages of it (docs/figures.md).
struct FileResidencySummary {
    ResidencyFile file;
    int samples = 0;
    Peak cached, dirty, writeback, evicted; // pages (cachestat; mincore gives only cached)
    Kib first_cached, final_cached;         // pages
    std::optional<std::int64_t> time_to_90_ms;
    // Lower bound: per bucket and interval, pages whose shadow entry went away while the cache
    // grew by as many (a refault replaces the shadow entry of an evicted page with the page).
    std::optional<std::int64_t> refaulted;
    // Shadow entries at the first sample: pages evicted before the recording began (by an earlier
    // job, or memory pressure since the file was written), not by this run.
    std::optional<std::int64_t> evicted_at_start;
    // Lower bound of the pages evicted while the file was followed: per bucket and interval, how
    // much its shadow entries grew (an eviction re-read before the next sample is not seen).
    std::optional<std::int64_t> evicted_during;
    // The oldest carried bucket of any sample that read only some (schema 9: a file whose whole
    // page-cache read costs more than 2 ms is read in rotation); empty when every sample read all.
    std::optional<std::int64_t> max_carried_age_ms;
    struct PerProcess {
        std::int64_t process_id = 0;
        Peak present; // pages
        std::int64_t final_present = 0, mapped_pages = 0;
        // The process's memory of this file computed from pagemap at the residency rate: RSS =
        // present pages; PSS = present pages divided among the tree's sharers (schema >= 5).
        Peak rss, pss;
        Kib final_rss, final_pss;
        // The most processes outside the tree seen mapping the file, and not looked at: with
        // either above 0, the computed PSS may be too large (empty: never looked).
        std::optional<std::int32_t> outside_sharers, outside_unreadable;
    };
    std::vector<PerProcess> processes;
    // replay only: the loader's dataset file
    bool loader_data_file = false;
    Kib cached_before; // pages, just before the loader started
    // The first sample, the first with reads counted, then as reading crossed 10, 25, 50, 75, 99%.
    std::vector<ResidencyCheckpoint> checkpoints;
    std::optional<ResidencyCheckpoint> headline; // first sample with >= 1% of the file read
};

struct TierSummary {
    std::string tier;
    std::int64_t nominal_ms = 0, longest_ms = 0, last_ms = 0;
    double cpu_us_per_run = 0;
    // rollup: its rows, those that repeat a reading kept while the tree stood still, and the
    // oldest such reading's age.
    std::int64_t rows = 0, kept_rows = 0, oldest_kept_ms = 0;
    // rollup: rows whose PSS is composite (the rest kept, the data files' share from pagemap).
    std::int64_t composite_rows = 0, oldest_composite_ms = 0;
};

struct TreeTotals {
    Peak rss, pss, uss, cgroup_usage;
    Kib cgroup_limit;
    bool cgroup_unlimited = false;
    std::string cgroup_version, cgroup_path;
    std::optional<std::int64_t> oom_kills, failcnt;
    int rollup_unreadable = 0; // processes whose PSS/USS could not be read: the sums leave them out
};

// Processes born in the tree that no scan saw (they were born and gone between two), as the
// kernel's process events counted them (BirthCounter), or why that could not be counted.
struct ProcessesMissed {
    std::optional<std::int64_t> born, missed; // both or neither
    bool at_least = false;                    // events were lost: missed is a lower bound
    std::string unavailable;                  // the reason, when not counted
};

struct MergedReport; // merged_report.hpp
class FigureModel;   // figure_model.hpp

struct ReportData {
    std::string path;
    std::string part; // a merged recording's part this report is of (report --part), or empty
    std::map<std::string, std::string> meta;
    bool finished = false;
    RecordingEnd end;        // finished, still being written, or cut (and when)
    std::string missing_wal; // FILE-wal, when the main file is in WAL mode and it is not there
    std::optional<std::int64_t> start_unix_ns;
    // end_ms, or the last sample of a recording not finished (never earlier than the last sample)
    std::int64_t duration_ms = 0;
    std::vector<ProcessSummary> processes;
    ProcessesMissed processes_missed;
    std::vector<FileSummary> files;
    // Processes whose smaps could not be read at some sample (another user's, no
    // CAP_SYS_PTRACE), with the first reason: `files` lacks what they mapped.
    std::vector<Unavailability> files_unavailable;
    TreeTotals totals;
    std::vector<TierSummary> tiers;
    std::vector<Marker> markers;
    std::vector<Timed<Unavailability>> unavailable;
    std::vector<FileResidencySummary> residency;
    LoaderRun loader; // empty unless the run came from `loaderlens replay`
    Diagnosis diagnosis;
    // A merged recording (`loaderlens merge`): each part's own report and the job's totals. Then
    // processes, markers and unavailable hold every part's (times on the job's axis), the
    // diagnosis's schedulers are the job totals and its findings every part's (Finding::part);
    // files, tiers, residency and the rest of the diagnosis are in the parts' reports only.
    std::shared_ptr<const MergedReport> merged;
};

// What a report is built from: a recording's rows (all of them), how it ended, where they came
// from. A merged recording's part is one too (merged_report.hpp).
struct ReportInput {
    std::string path;        // the file
    std::string part;        // the part of a merged recording, or empty
    RecordingData data;      // read_all()
    RecordingEnd end;        // Recording::end(), or the part's
    std::string missing_wal; // Recording::missing_wal()
};

// The residency part of build_report (report_residency.cpp): from `data`, all of a recording;
// `cached_before`: its meta loader.data_file_cached_pages_before.
std::vector<FileResidencySummary> summarize_residency(const RecordingData& data,
                                                      const std::vector<ProcessSummary>& processes,
                                                      Kib cached_before);
// The same, the figure from `recording`'s meta.
std::vector<FileResidencySummary> summarize_residency(const Recording& recording,
                                                      const RecordingData& data,
                                                      const std::vector<ProcessSummary>& processes);

// The report of a recording; of a merged one, the job's (ReportData::merged).
ReportData build_report(const Recording& recording, const DiagnosisOptions& options = {});
// The report of rows already read (a merged recording's part). A meta value that should be a
// number and is not is a RecordingError naming input.path (and the part).
ReportData build_report(ReportInput input, const DiagnosisOptions& options = {});
// A meta value that holds a number (nullopt: absent), as Recording::meta_number says it.
std::optional<std::int64_t> report_meta_number(const ReportInput& input, const std::string& key);
// The diagnosis of `data` (all of a recording), whose report is `report` (diagnosis.cpp).
Diagnosis diagnose(const RecordingData& data, const ReportData& report,
                   const DiagnosisOptions& options);
// The same on the figure model of `data` the report was built from (one model per report: on a
// 1 h x 32-worker recording each is ~36 MB).
Diagnosis diagnose(const RecordingData& data, const ReportData& report,
                   const DiagnosisOptions& options, const FigureModel& model);
// Only the scheduler views' series (for the export): no recorder share, no intervals.
std::vector<SchedulerView> scheduler_series(const RecordingData& data);
// The process with this recording id among `processes`, or null.
const ProcessInfo* find_process(const std::vector<ProcessSummary>& processes, std::int64_t id);
std::string render_report_text(const ReportData& report);
std::string render_report_json(const ReportData& report);

} // namespace loaderlens
