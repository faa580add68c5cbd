// SPDX-License-Identifier: MIT
// Writes the reference loader's account into a recording as it arrives (private to the store
// layer; the Recorder owns one). Each worker event names the process by PID: its row is found
// among the processes the tracker has written, and given the loader's slot and generation. A
// worker the tracker has not seen yet is found again at reconcile(), when the run ends.
#pragma once

#include "loaderlens/loader_run.hpp"
#include "loaderlens/sqlite.hpp"

namespace loaderlens {

class LoaderWriter {
  public:
    // `revision`: the Recorder's process revision counter, raised for each process row changed.
    LoaderWriter(sql::Database& db, std::int64_t& revision);
    // What the loader reported since the last call (config and status into meta via `set_meta`).
    void write(const LoaderRun& events);
    // The run ended: workers not yet matched to a process are matched now.
    void reconcile();
    // An account read back from a recording (the merge): workers keep the process ids they carry
    // (already the ids of this file), none is looked up by PID, no process row changes.
    void copy(const LoaderRun& run);

  private:
    void write_epochs_and_progress(const LoaderRun& run);
    void insert_worker(const LoaderWorker& worker, std::int64_t process_id);
    // The worker's process row: same PID, born closest to the moment main forked it (a PID can
    // have been reused within the run). 0 when the tracker never saw it.
    std::int64_t find_process(std::int64_t pid, std::int64_t t_ms);
    void assign_slot(std::int64_t process_id, const LoaderWorker& worker);

    sql::Database& db_;
    std::int64_t& revision_;
    sql::Statement epoch_, progress_, worker_, find_, slot_;
};

} // namespace loaderlens
