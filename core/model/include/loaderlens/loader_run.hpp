// SPDX-License-Identifier: MIT
// What the reference loader (probes/, `loaderlens replay`) reports about its run: its
// configuration, which process is which worker, and per-epoch throughput. The loader writes JSON
// lines to the file named by LOADERLENS_LOADER_EVENTS (format: docs/recording.md, "Loader
// events"); the recorder reads them when the run ends and keeps them in the recording.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loaderlens {

struct LoaderEpoch {
    int epoch = 0;
    int generation = 0; // of the workers that loaded it
    std::int64_t start_ms = 0, end_ms = 0;
    std::int64_t samples = 0, batches = 0;
    std::int64_t bytes_read = 0; // bytes the loader took from the dataset
    int part = 0;                // its node's part in a merged recording (schema 7); else 0
    // In double: stored extremes (a damaged recording) must not overflow int64.
    double seconds() const {
        return (static_cast<double>(end_ms) - static_cast<double>(start_ms)) / 1000.0;
    }
    double samples_per_second() const;
    double mib_per_second() const;
};

struct LoaderWorker {
    int worker = 0;
    int generation = 0;
    int epoch = 0; // the epoch it was forked for
    std::int64_t pid = 0;
    std::int64_t t_ms = 0; // when main forked it
    int part = 0;          // its node's part in a merged recording (schema 7); else 0
    // Its process row (processes.id) as stored; 0: not matched (yet), or not read back.
    std::int64_t process_id = 0;
};

// How far the loader's reading had come at a moment: what its workers had finished reading (a
// batch counts once its worker reported it done, so up to one batch per worker may be read in
// part and not yet counted). Distinct bytes count each record once; a worker's own distinct
// bytes restart when it is re-forked, since a new process starts with nothing mapped.
struct LoaderProgress {
    std::int64_t t_ms = 0;
    int epoch = 0;
    int generation = 0;
    std::int64_t bytes_read = 0;                     // since the run started, repeats included
    std::int64_t distinct_bytes = 0;                 // records read at least once, x record size
    std::vector<std::int64_t> worker_distinct_bytes; // by worker id, for its current process
    int part = 0; // its node's part in a merged recording (schema 7); else 0
};

struct LoaderRun {
    std::string config_json; // the loader's "config" event as it wrote it
    std::vector<LoaderEpoch> epochs;
    std::vector<LoaderWorker> workers;
    std::vector<LoaderProgress> progress; // about every 100 ms and at each epoch's end
    std::string status;  // "ok", "error", or empty when the loader never said (it was killed)
    std::string message; // why, for "error"
    int unreadable_lines = 0;
    bool empty() const { return config_json.empty() && epochs.empty() && workers.empty(); }
};

} // namespace loaderlens
