// SPDX-License-Identifier: MIT
// The latest figures of a recording being written, kept from what a reader's cursor brings
// (Recording::read_new) and written in the Prometheus text format 0.0.4 for node_exporter's
// textfile collector (docs/metrics.md). Series are per role and worker slot, never per PID:
// re-forked workers get new PIDs every epoch, and a label per PID would start new series each time
// (cardinality churn). It keeps only the latest tick of each tier (and the views' peaks), so its
// size does not grow with the recording.
#pragma once

#include "loaderlens/recording_data.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace loaderlens {

// The recorder's own memory (it is a process of the step: SLURM counts it), as the report adds
// it to the views (meta recorder_peak_rss_kb, recorder_pss_kb, recorder_anon_kb).
struct RecorderFootprint {
    Kib rss, peak_rss, pss, anon; // VmRSS, VmHWM, Pss, RssAnon
};

class LiveMetrics {
  public:
    // Folds a read into the latest values (reads in the order they were made).
    void add(const RecordingData& newer);
    // The recorder's footprint for the next textfile (read at each write).
    void set_recorder(const RecorderFootprint& recorder) { recorder_ = recorder; }

    // The textfile: families as the export names them (openmetrics.hpp), without pid, with
    // loaderlens_recording_live `live` (1 while recording, 0 in the file left at the end) and,
    // given `written_unix_ms`, loaderlens_textfile_write_timestamp_seconds (a running recorder's
    // rewrite; the file left at the end has none). Ends with a newline, has no sample
    // timestamps (node_exporter skips a file with one). The tree sums come from one moment: the
    // latest rollup tick and the fast tick its processes were listed at.
    std::string textfile(bool live, std::optional<std::int64_t> written_unix_ms = {}) const;

  private:
    struct Process {
        Role role = Role::helper;
        int slot = -1;
    };
    // A file's latest residency figures: its page cache, and the tree's sums at the latest run.
    struct FileNow {
        std::int64_t cache_t = -1, mapped_t = -1;
        std::optional<std::int64_t> cached_pages;
        std::int64_t present_pages = 0;
        Kib pss;
    };
    // A scheduler view (scheduler_series): its value at the latest tick, its peak so far.
    struct View {
        std::string key;
        Kib current, peak, limit;
        bool recorder_in_figure = false; // a cgroup view: the recorder is charged there
    };
    struct FastTick {
        std::int64_t t = -1;
        std::vector<FastSample> rows;
    };

    std::map<std::string, std::string> meta_;
    std::unordered_map<std::int64_t, Process> processes_;
    std::int64_t rollup_t_ = -1;
    // The fast ticks from the one in effect at the latest rollup tick (the latest at or before
    // it: the tree a deep run samples is the fast tick's before it) to the latest one.
    std::deque<FastTick> fast_;
    std::vector<RollupSample> rollup_; // the latest rollup tick's rows
    std::optional<CgroupSample> cgroup_;
    std::map<std::int64_t, ResidencyFile> files_;
    std::map<std::int64_t, FileNow> file_now_;
    std::vector<View> views_;
    std::int64_t last_sample_ms_ = -1;
    RecorderFootprint recorder_;
};

} // namespace loaderlens
