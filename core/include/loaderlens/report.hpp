// The run summary that `report` prints: per process, per mapped file and for the whole tree.
// Built from a Recording by pure functions; rendered as text or JSON.
#pragma once

#include "loaderlens/recording.hpp"

#include <map>
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
    std::int64_t last_seen_ms = 0;
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

struct TierSummary {
    std::string tier;
    std::int64_t nominal_ms = 0, longest_ms = 0, last_ms = 0;
    double cpu_us_per_run = 0;
};

struct TreeTotals {
    Peak rss, pss, uss, cgroup_usage;
    Kib cgroup_limit;
    bool cgroup_unlimited = false;
    std::string cgroup_version, cgroup_path;
    std::optional<std::int64_t> oom_kills, failcnt;
    int rollup_unreadable = 0; // processes whose PSS/USS could not be read: the sums leave them out
};

struct ReportData {
    std::string path;
    std::map<std::string, std::string> meta;
    bool finished = false;
    std::int64_t duration_ms = 0;
    std::vector<ProcessSummary> processes;
    std::vector<FileSummary> files;
    TreeTotals totals;
    std::vector<TierSummary> tiers;
    std::vector<Marker> markers;
    std::vector<Timed<Unavailability>> unavailable;
    LoaderRun loader; // empty unless the run came from `loaderlens replay`
};

ReportData build_report(const Recording& recording);
std::string render_report_text(const ReportData& report);
std::string render_report_json(const ReportData& report);

} // namespace loaderlens
