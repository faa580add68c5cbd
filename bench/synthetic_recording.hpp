// SPDX-License-Identifier: MIT
// A recording written by the real writer (Recorder, SampleBatch) at the nominal tier rates of
// `loaderlens record`, without a process tree: the reading bench needs recordings of hours, made
// in seconds. Per simulated second, in time order as the session queues them:
//   fast tier every 100 ms (main, the workers, the helpers), cgroup and system with the first;
//   deep runs at +20 ms and +520 ms: rollup in both, maps (so many objects per process) and
//   residency (one data file: a page-cache row and a mapped row per worker) in the first;
//   tier stats every 10 s per tier, a marker now and then; one commit at the end of the second.
// Bucket vectors mostly stay as they were and sometimes change (a few buckets gain pages), so
// the writer stores both "unchanged" NULLs and keyframes, as in a real run.
#pragma once

#include "loaderlens/recorder.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace loaderlens::bench {

struct RecordingShape {
    int workers = 16;
    int helpers = 1;
    int objects_per_process = 3; // the data file, heap, anonymous memory
    std::int64_t data_file_bytes = 7'000'000'000;
    int residency_buckets = 256;
    // Chance per residency sample that the page cache's vector changes, and each worker's.
    double cache_change = 0.25, mapped_change = 0.15;
    std::int64_t marker_every_s = 60;
    // Workers exit and are forked again (a new generation per slot) this often; 0: persistent.
    std::int64_t refork_every_s = 0;
};

// Rows written per table, to check that a reader got exactly them.
struct RowCounts {
    std::size_t fast = 0, rollup = 0, maps = 0, cgroup = 0, system = 0, markers = 0;
    std::size_t cache = 0, mapped = 0;
    RowCounts& operator+=(const RowCounts& o);
};

class SyntheticRecording {
  public:
    SyntheticRecording(const std::string& path, const RecordingShape& shape);
    ~SyntheticRecording();
    SyntheticRecording(const SyntheticRecording&) = delete;
    SyntheticRecording& operator=(const SyntheticRecording&) = delete;

    // Appends `seconds` simulated seconds; returns the rows they wrote.
    RowCounts write_seconds(std::int64_t seconds);
    // A meta value of the recording (the GUI bench marks its live writer: writer_pid, host).
    void set_meta(const std::string& key, const std::string& value);
    // Writes the end (state finished, the indexes, the WAL folded in) and closes the writer.
    void finish();
    // Simulated seconds written so far (the next second starts at seconds() * 1000 ms).
    std::int64_t seconds() const { return next_second_; }
    const RowCounts& total() const { return total_; }
    const std::string& path() const { return path_; }

  private:
    struct Process;
    void fast_batch(std::int64_t t, bool first_of_second, RowCounts& rows);
    void deep_batch(std::int64_t t, bool full, RowCounts& rows);
    void refork_workers(std::int64_t t, SampleBatch& batch);
    ProcessInfo born(Role role, std::int64_t t, int slot, int generation);
    std::uint64_t random();
    bool chance(double p) { return static_cast<double>(random() % 1'000'000) < p * 1e6; }
    void change_some(BucketCounts& buckets);

    std::string path_;
    RecordingShape shape_;
    std::unique_ptr<Recorder> recorder_;
    std::vector<std::unique_ptr<Process>> live_; // main, workers by slot, helpers
    ResidencyFile file_;
    BucketCounts cached_, evicted_;
    std::int64_t next_id_ = 1, next_second_ = 0;
    int generation_ = 0;
    std::uint64_t state_ = 0x9e3779b97f4a7c15ULL;
    RowCounts total_;
};

} // namespace loaderlens::bench
