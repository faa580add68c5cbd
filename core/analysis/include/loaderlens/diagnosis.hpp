// SPDX-License-Identifier: MIT
// The diagnosis of a recording: what each scheduler will count and the limit it is held against,
// the epochs and each worker slot's growth across them, and findings that say why memory looks
// the way it does and what to change. Plain values; built by diagnose() (report.hpp), rendered by
// the text and JSON reports, read by the CI check and the dashboard. Rules, thresholds and the
// measurements behind them: docs/findings.md; JSON keys: docs/report-json.md.
#pragma once

#include "loaderlens/series.hpp"
#include "loaderlens/site_accounting.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

// A shared object by its name (".so", ".so.N"): libraries are grouped in reports, and a finding
// names one only when it is a large part of what it explains.
bool is_shared_library(const std::string& path);

// Most severe first: a sort by severity puts what can kill the job at the top.
enum class Severity { critical, warning, info };
const char* to_string(Severity severity);

// The memory a job is held against, and where that figure came from.
struct MemoryLimit {
    Kib kb;             // empty: no limit known
    std::string source; // "--mem-limit", "SLURM_MEM_PER_NODE", "cgroup v1 memory.limit_in_bytes"...
};

// One way of counting the tree's memory, as a scheduler or the kernel does (kernel-notes.md).
struct SchedulerView {
    std::string key;        // stable: slurm_linux, slurm_usepss, slurm_noshared, slurm_cgroup,
                            // cgroup_usage, k8s_working_set
    std::string name;       // "SLURM jobacct_gather/linux"
    std::string counts;     // what it sums, in a few words
    std::string source;     // the recorded figures it is computed from
    std::string at_limit;   // what happens when the figure reaches the limit
    std::string short_name; // "SLURM linux: Σ RSS", for a narrow table (the report's first screen)
    std::vector<SeriesPoint> points; // every tick of the tier it comes from
    Kib peak;
    std::int64_t peak_ms = 0;
    // The process that held the most of it at the peak tick (per-process views only).
    std::optional<std::int64_t> peak_process_id;
    Kib peak_process_kb;
    // Who held it at the peak tick, the largest first: main, each worker slot, helpers (per-process
    // views: the lane's sum at that tick), or the cgroup's anon, file and shmem (cgroup views).
    struct Holder {
        std::string what; // "main", "worker 3", "helpers", "anon", "active file"...
        Kib kb;
        int processes = 0; // per-process views: how many processes of the lane held a value
    };
    std::vector<Holder> holders;
    std::int64_t interval_ms =
        0;           // the longest interval its tier ran at: shorter spikes can be missed
    int samples = 0; // ticks with a value: a peak of one or two says little
    // The recorder's own part of this figure (it is a process of the step); peak + recorder is
    // what the scheduler sees for the job with the recorder inside it.
    Kib recorder_kb;
    bool recorder_in_figure = false; // a cgroup figure: the recorder is charged there already
    // What the scheduler counts for the job at the peak: peak + the recorder's share (where the
    // figure does not charge it already; an unknown share counts 0). The margin and the limit
    // finding are about this figure.
    Kib counted_kb;
    MemoryLimit limit;
    Kib margin_kb;           // limit - counted; negative: over it
    std::string unavailable; // why there is no peak (no cgroup sample, no PSS readable...)
    // How the site treats this figure (Diagnosis::site): "enforced" (it acts at the limit),
    // "accounted" (SLURM records it as MaxRSS, nothing more), "" (not the site's figure, or the
    // site is not known: then every view is judged).
    std::string site_role;
    // What SLURM sees of it polling every `period_s` (the site's JobAcctGatherFrequency, SLURM
    // views only): the highest poll of the run for each of `phases` equally spaced poll phases,
    // the median of those (what SLURM most likely recorded), the lowest and the highest; and at
    // how many phases a poll saw the counted figure over the limit.
    struct Polled {
        int period_s = 0;
        Kib likely_kb, low_kb, high_kb; // the view's figure, without the recorder
        int phases = 0, phases_over = 0;
    };
    std::optional<Polled> polled;
    // One of several tasks of a SLURM step on this node (per-process views): SLURM holds the
    // tasks' sum to the step's limit. The sum over this task and the siblings' recordings found,
    // at each tick of any, with each recorder's share; judged only when every task was found.
    struct NodeSum {
        int tasks = 0, recorded = 0;
        std::vector<SeriesPoint> points;
        Kib peak;
        std::int64_t peak_ms = 0;
        Kib recorders_kb, counted_kb, margin_kb;
    };
    std::optional<NodeSum> node;
    // The figure held against the limit: the node sum's when complete, else this tree's.
    Kib judged_counted_kb() const;
    Kib judged_margin_kb() const;
};

// A sibling task of the same SLURM step on the same node, recorded by its own recorder
// (found by the report beside the recording: docs/slurm.md).
struct TaskOnNode {
    std::string path;
    std::string task;           // its SLURM_PROCID
    std::int64_t offset_ms = 0; // its start on this recording's clock
    std::int64_t duration_ms = 0;
    bool cut = false; // its recorder was killed (with the step): its end is not known
    std::vector<SchedulerView> views; // task_views() of its recording
};

struct Epoch {
    int number = 0;
    std::int64_t start_ms = 0, end_ms = 0;
    // Its start was marked ("epoch N start"); else it starts where the previous one ended.
    bool start_marked = false;
};

// One figure of one worker slot (or main) at each epoch's end, or over time without epochs.
struct GrowthFigure {
    std::string figure; // rss, pss, uss, private_dirty, rss_file, or "file" for a mapped file
    std::string path;   // the file, for "file"
    std::vector<Kib> at_epoch_end; // one per epoch (empty value: not sampled in that epoch)
    // One per epoch: how old the value was at the epoch's end (0: read at it; a reading kept or
    // carried, or the tier's last sample before the end, is older).
    std::vector<std::int64_t> age_ms;
    // Grew by more than the noise threshold at every epoch end of >= 3 epochs, in one process.
    bool monotone = false;
    // Without epochs: the figure over the slot's lifetime after its settling time.
    std::optional<std::int64_t> trend_from_ms, trend_to_ms;
    Kib trend_first, trend_last;
    std::optional<std::int64_t> growth_per_epoch_kb() const; // mean over the epochs, if >= 2
};

struct SlotGrowth {
    int slot = -1; // -1: the main process
    std::string label;
    int generations = 0;
    std::vector<GrowthFigure> figures;
    const GrowthFigure* find(const std::string& figure, const std::string& path = {}) const;
};

// One cause of the gap between Σ RSS and Σ PSS: pages counted by RSS in every process that maps
// them, split by what backs them (the largest first).
struct GapShare {
    std::string cause; // "file", "shmem", "anon"
    std::string what;  // the file, or a description
    std::int64_t gap_kb = 0;
};

struct Finding {
    std::string kind; // stable key (docs/findings.md)
    Severity severity = Severity::info;
    std::string title;                 // one line, the conclusion
    std::vector<std::string> evidence; // numbers, processes, files, times
    std::string advice;                // what to change
    // What it is about, for a viewer to select: processes, a worker slot, a file, a time range.
    std::vector<std::int64_t> process_ids;
    int slot = -1;
    std::string file;
    std::int64_t from_ms = 0, to_ms = 0;
    // Its key figure, which a user (and a test) can check against the kernel.
    std::string figure_name;
    double figure = 0;
    std::string figure_unit; // "KiB", "x", "KiB/epoch"
    // How much memory it explains: among findings of one severity, the larger comes first.
    std::int64_t explains_kb = 0;
    // In a merged recording's job report: the part (node) it is about; empty otherwise.
    std::string part;
};

// A slot's figures over the run in equal time columns (the highest value sampled in each; empty:
// no sample), for a sparkline in a terminal.
struct SlotTimeline {
    int slot = -1; // -1: main
    std::string label;
    std::int64_t from_ms = 0, to_ms = 0;
    std::vector<Kib> rss, pss, uss;
    int samples_rss = 0, samples_pss = 0; // rows behind them
};

struct Diagnosis {
    std::vector<SchedulerView> schedulers; // the site's figures first
    MemoryLimit limit;
    SiteAccounting site; // what the job's cluster counts and enforces (known or not)
    // A SLURM step's tasks on this node (meta slurm_gtids): their SLURM_PROCIDs, which of them
    // were found recorded beside this one (this task included), and the names looked for in vain.
    std::vector<std::string> node_tasks, node_tasks_found, node_tasks_missing;
    // Recorder's own size (meta written every second and when it finished; empty if it was killed
    // before its first second).
    Kib recorder_peak_rss_kb, recorder_pss_kb, recorder_anon_kb;
    // What the cgroup held at its first sample, before the command had done much, and its sample
    // at the peak of its usage (for the split into anon, active and inactive file, shmem).
    Kib cgroup_before_kb;
    std::optional<CgroupSample> cgroup_at_peak;
    std::vector<Epoch> epochs;
    std::string epochs_source; // "markers", "generations", or empty: not known
    std::vector<SlotGrowth> growth;
    std::vector<SlotTimeline> timelines;
    std::vector<GapShare> gap; // at gap_ms
    std::int64_t gap_ms = 0;
    Kib gap_total_kb;              // Σ RSS - Σ PSS at gap_ms
    std::vector<Finding> findings; // most severe first
    const SchedulerView* view(const std::string& key) const;
};

struct DiagnosisOptions {
    Kib mem_limit_kb; // the report's --mem-limit: before any other limit
    // The report's --accounting (a SchedulerView key): before the site's recorded configuration.
    std::optional<std::string> accounting;
    // The step's other tasks on this node, recorded beside this recording, and the names of the
    // ones not found ("NAME: why").
    std::vector<TaskOnNode> siblings;
    std::vector<std::string> siblings_missing;
};

// A recording's scheduler views with the recorder's share of each (for a sibling task's sum).
std::vector<SchedulerView> task_views(const RecordingData& data);

} // namespace loaderlens
