// SPDX-License-Identifier: MIT
// The reference loader's account, kept in a recording.
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "recording_read.hpp"

#include <nlohmann/json.hpp>

namespace loaderlens {

using nlohmann::json;

namespace {

// Bounds on JSON read from a recording: nlohmann parses any depth, but dumping it recurses once per
// level (200 KB of "[[[..." took 8 GB and then the stack) and the config is a flat object anyway.
constexpr int max_recorded_json_depth = 64;
constexpr std::size_t max_recorded_json_bytes = 1 << 20;

// Whether brackets nest deeper than `limit` in `text` (outside strings): checked before parsing.
bool nests_deeper_than(const std::string& text, int limit) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

// The reference loader's config (meta loader.config) as JSON: null when the recording has none.
// Anything but a JSON object within the bounds above is damage: RecordingError naming the file
// and the key.
nlohmann::json loader_config(const std::string& path, const std::string& text) {
    if (text.empty()) return nullptr;
    auto damaged = [&](const std::string& why) {
        return RecordingError(path + ": meta loader.config " + why +
                              " where the loader's JSON object belongs (damaged recording?)");
    };
    if (text.size() > max_recorded_json_bytes)
        throw damaged("holds " + std::to_string(text.size()) + " bytes");
    if (nests_deeper_than(text, max_recorded_json_depth))
        throw damaged("nests deeper than " + std::to_string(max_recorded_json_depth) + " levels");
    auto config = nlohmann::json::parse(text, nullptr, false);
    if (!config.is_object()) throw damaged("holds something else");
    return config;
}

} // namespace

void Recorder::write_loader_run(const LoaderRun& run) {
    if (run.empty() && run.status.empty()) return;
    if (!in_transaction_) {
        db_->exec("BEGIN");
        in_transaction_ = true;
    }
    if (!run.config_json.empty()) set_meta("loader.config", run.config_json);
    set_meta("loader.status",
             run.status.empty() ? "unknown (the loader did not finish)" : run.status);
    if (!run.message.empty()) set_meta("loader.message", run.message);
    if (run.unreadable_lines > 0)
        set_meta("loader.unreadable_lines", std::to_string(run.unreadable_lines));
    auto epoch = db_->prepare("INSERT INTO loader_epochs VALUES(?,?,?,?,?,?,?)");
    for (const LoaderEpoch& e : run.epochs)
        epoch.bind(1, std::int64_t{e.epoch})
            .bind(2, std::int64_t{e.generation})
            .bind(3, e.start_ms)
            .bind(4, e.end_ms)
            .bind(5, e.samples)
            .bind(6, e.batches)
            .bind(7, e.bytes_read)
            .run();
    auto progress = db_->prepare("INSERT INTO loader_progress VALUES(?,?,?,?,?,?)");
    for (const LoaderProgress& p : run.progress)
        progress.bind(1, p.t_ms)
            .bind(2, std::int64_t{p.epoch})
            .bind(3, std::int64_t{p.generation})
            .bind(4, p.bytes_read)
            .bind(5, p.distinct_bytes)
            .bind(6, json(p.worker_distinct_bytes).dump())
            .run();
    // The worker's process row: same PID, born closest to the moment main forked it (a PID can
    // have been reused within the run).
    auto find =
        db_->prepare("SELECT id FROM processes WHERE pid=? ORDER BY abs(birth_ms - ?) LIMIT 1");
    auto worker = db_->prepare("INSERT INTO loader_workers VALUES(?,?,?,?,?,?)");
    auto slot = db_->prepare("UPDATE processes SET role='worker', slot=?, generation=? WHERE id=?");
    for (const LoaderWorker& w : run.workers) {
        find.bind(1, w.pid).bind(2, w.t_ms);
        const bool seen = find.step();
        const std::int64_t process_id = seen ? find.int64(0) : 0;
        find.reset();
        worker.bind(1, std::int64_t{w.worker})
            .bind(2, std::int64_t{w.generation})
            .bind(3, std::int64_t{w.epoch})
            .bind(4, w.pid)
            .bind(5, w.t_ms);
        if (seen)
            worker.bind(6, process_id);
        else
            worker.bind_null(6); // lived and died between two scans of the tree
        worker.run();
        if (seen)
            slot.bind(1, std::int64_t{w.worker})
                .bind(2, std::int64_t{w.generation})
                .bind(3, process_id)
                .run();
    }
}

LoaderRun Recording::loader_run() const {
    return read_recording(path_, [&] { return read_loader_run(); });
}

LoaderRun Recording::read_loader_run() const {
    LoaderRun run;
    if (!db_->has_table("loader_epochs")) return run; // schema 1: before the loader existed
    run.config_json = meta("loader.config");
    loader_config(path_, run.config_json); // damaged: said when it is read
    run.status = meta("loader.status");
    run.message = meta("loader.message");
    auto epochs = db_->prepare("SELECT epoch, generation, start_ms, end_ms, samples, batches, "
                               "bytes_read FROM loader_epochs ORDER BY epoch");
    while (epochs.step())
        run.epochs.push_back({static_cast<int>(epochs.int64(0)), static_cast<int>(epochs.int64(1)),
                              epochs.int64(2), epochs.int64(3), epochs.int64(4), epochs.int64(5),
                              epochs.int64(6)});
    auto workers = db_->prepare(
        "SELECT worker, generation, epoch, pid, t_ms FROM loader_workers ORDER BY t_ms, worker");
    while (workers.step())
        run.workers.push_back(
            {static_cast<int>(workers.int64(0)), static_cast<int>(workers.int64(1)),
             static_cast<int>(workers.int64(2)), workers.int64(3), workers.int64(4)});
    if (!db_->has_table("loader_progress")) return run; // schema 2: before progress events
    auto progress = db_->prepare("SELECT t_ms, epoch, generation, bytes_read, distinct_bytes, "
                                 "workers FROM loader_progress ORDER BY t_ms");
    while (progress.step()) {
        LoaderProgress p{progress.int64(0),
                         static_cast<int>(progress.int64(1)),
                         static_cast<int>(progress.int64(2)),
                         progress.int64(3),
                         progress.int64(4),
                         {}};
        try {
            p.worker_distinct_bytes =
                json::parse(progress.text(5)).get<std::vector<std::int64_t>>();
        } catch (const json::exception&) { // written by us; leave it empty if damaged
        }
        run.progress.push_back(std::move(p));
    }
    return run;
}

} // namespace loaderlens
