// SPDX-License-Identifier: MIT
#include "loader_writer.hpp"

#include "recording_tables.hpp"
#include "row_writer.hpp"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace loaderlens {

LoaderWriter::LoaderWriter(sql::Database& db, std::int64_t& revision)
    : db_(db), revision_(revision),
      epoch_(db.prepare(recording_tables::insert_sql("loader_epochs"))),
      progress_(db.prepare(recording_tables::insert_sql("loader_progress"))),
      worker_(db.prepare(recording_tables::insert_sql("loader_workers"))),
      find_(db.prepare("SELECT id FROM processes WHERE pid=? ORDER BY abs(birth_ms - ?) LIMIT 1")),
      slot_(db.prepare(
          "UPDATE processes SET role='worker', slot=?, generation=?, revision=? WHERE id=?")) {}

std::int64_t LoaderWriter::find_process(std::int64_t pid, std::int64_t t_ms) {
    find_.bind(1, pid).bind(2, t_ms);
    const std::int64_t id = find_.step() ? find_.int64(0) : 0;
    find_.reset();
    return id;
}

void LoaderWriter::assign_slot(std::int64_t process_id, const LoaderWorker& w) {
    slot_.bind(1, std::int64_t{w.worker})
        .bind(2, std::int64_t{w.generation})
        .bind(3, ++revision_)
        .bind(4, process_id)
        .run();
}

void LoaderWriter::write_epochs_and_progress(const LoaderRun& run) {
    for (const LoaderEpoch& e : run.epochs) {
        epoch_.bind(1, std::int64_t{e.epoch})
            .bind(2, std::int64_t{e.generation})
            .bind(3, e.start_ms)
            .bind(4, e.end_ms)
            .bind(5, e.samples)
            .bind(6, e.batches)
            .bind(7, e.bytes_read);
        bind_part(epoch_, 8, e.part);
        epoch_.run();
    }
    for (const LoaderProgress& p : run.progress) {
        progress_.bind(1, p.t_ms)
            .bind(2, std::int64_t{p.epoch})
            .bind(3, std::int64_t{p.generation})
            .bind(4, p.bytes_read)
            .bind(5, p.distinct_bytes)
            .bind(6, nlohmann::json(p.worker_distinct_bytes).dump());
        bind_part(progress_, 7, p.part);
        progress_.run();
    }
}

void LoaderWriter::insert_worker(const LoaderWorker& w, std::int64_t process_id) {
    worker_.bind(1, std::int64_t{w.worker})
        .bind(2, std::int64_t{w.generation})
        .bind(3, std::int64_t{w.epoch})
        .bind(4, w.pid)
        .bind(5, w.t_ms);
    if (process_id)
        worker_.bind(6, process_id);
    else
        worker_.bind_null(6); // not seen by the tracker (yet): reconcile() looks again
    bind_part(worker_, 7, w.part);
    worker_.run();
}

void LoaderWriter::write(const LoaderRun& run) {
    write_epochs_and_progress(run);
    for (const LoaderWorker& w : run.workers) {
        const std::int64_t process_id = find_process(w.pid, w.t_ms);
        insert_worker(w, process_id);
        if (process_id) assign_slot(process_id, w);
    }
}

void LoaderWriter::copy(const LoaderRun& run) {
    write_epochs_and_progress(run);
    for (const LoaderWorker& w : run.workers)
        insert_worker(w, w.process_id);
}

void LoaderWriter::reconcile() {
    auto unmatched = db_.prepare("SELECT rowid, worker, generation, epoch, pid, t_ms FROM "
                                 "loader_workers WHERE process_id IS NULL");
    std::vector<std::pair<std::int64_t, LoaderWorker>> workers; // read all before writing
    while (unmatched.step())
        workers.push_back(
            {unmatched.int64(0),
             {static_cast<int>(unmatched.int64(1)), static_cast<int>(unmatched.int64(2)),
              static_cast<int>(unmatched.int64(3)), unmatched.int64(4), unmatched.int64(5)}});
    auto matched = db_.prepare("UPDATE loader_workers SET process_id=? WHERE rowid=?");
    for (const auto& [rowid, w] : workers) {
        // Lived and died between two scans of the tree: no process row, none to give a slot.
        const std::int64_t process_id = find_process(w.pid, w.t_ms);
        if (!process_id) continue;
        matched.bind(1, process_id).bind(2, rowid).run();
        assign_slot(process_id, w);
    }
}

} // namespace loaderlens
