// SPDX-License-Identifier: MIT
// The reading engine against a recording being written: a reader polls `loaderlens replay`'s
// recording with a cursor while the recorder writes it, and must end with exactly what a fresh
// full read of the finished file gives (every row once: deep-tier rows committed after newer fast
// rows, residency rows stored as "unchanged", process rows that change). A second reader starts
// mid-recording and must decode residency from the nearest keyframe. Oracle for the layout:
// Python's sqlite3 module reading the file directly.
#include "loaderlens/lanes.hpp"
#include "loaderlens/recording.hpp"
#include "replay_support.hpp"
#include "support.hpp"

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <thread>

namespace loaderlens::test {
namespace {

auto key(const ProcessInfo& p) {
    return std::tuple(p.id, p.key.pid, p.key.start_ticks, p.ppid, p.parent_id, p.comm, p.cmdline,
                      p.role, p.slot, p.generation, p.birth_ms, p.exit_ms, p.exit_status);
}
auto key(const Timed<FastSample>& r) {
    const FastSample& s = r.sample;
    return std::tuple(r.t_ms, s.process_id, s.rss, s.rss_anon, s.rss_file, s.rss_shmem, s.swap);
}
auto key(const Timed<RollupSample>& r) {
    const RollupSample& s = r.sample;
    return std::tuple(r.t_ms, s.process_id, s.rss, s.pss, s.pss_anon, s.pss_file, s.pss_shmem,
                      s.private_clean, s.private_dirty, s.swap_pss);
}
auto key(const MapRow& r) {
    return std::tuple(r.t_ms, r.process_id, r.object_id, r.figures.rss_kb, r.figures.pss_kb);
}
auto key(const Timed<SystemSample>& r) {
    return std::tuple(r.t_ms, r.sample.mem_available, r.sample.cached, r.sample.active_file);
}
auto key(const Timed<CacheResidency>& r) {
    const CacheResidency& c = r.sample;
    return std::tuple(r.t_ms, c.file_id, c.totals.cached, c.totals.evicted, c.buckets,
                      c.evicted_buckets);
}
auto key(const Timed<MappedResidency>& r) {
    const MappedResidency& m = r.sample;
    return std::tuple(r.t_ms, m.file_id, m.process_id, m.mapped_pages, m.present_pages, m.buckets);
}
auto key(const LoaderEpoch& e) {
    return std::tuple(e.epoch, e.generation, e.start_ms, e.end_ms, e.samples, e.bytes_read);
}
auto key(const LoaderWorker& w) {
    return std::tuple(w.worker, w.generation, w.pid, w.t_ms);
}
auto key(const LoaderProgress& p) {
    return std::tuple(p.t_ms, p.bytes_read, p.distinct_bytes, p.worker_distinct_bytes);
}
auto key(const Marker& m) {
    return std::tuple(m.t_ms, m.source, m.text);
}

template <typename Row>
void require_same(const std::vector<Row>& seen, const std::vector<Row>& full, const char* what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_REQUIRE_EQUAL(seen.size(), full.size());
        for (std::size_t i = 0; i < seen.size(); ++i)
            BOOST_REQUIRE_MESSAGE(key(seen[i]) == key(full[i]), what << " row " << i << " differs");
    }
}

// What Python's sqlite3 prints for `sql` on `db` (one line per row, columns separated by spaces).
std::vector<std::string> python_sql(const std::string& db, const std::string& sql) {
    const RunResult result =
        run({"/usr/bin/python3", "-c",
             "import sqlite3, sys\n"
             "c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n"
             "for row in c.execute(sys.argv[2]): print(' '.join(str(v) for v in row))\n",
             db, sql});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "python3 sqlite3: " + result.err);
    return lines_of(result.out);
}

struct LiveRun {
    RecordingData seen_live, seen_late;
    int polls_with_rows = 0;
    bool epochs_while_recording = false;
    std::size_t late_rows_at_start = 0; // full-read cache rows before the late reader started
};

// Replays a small dataset (3 epochs of 2 workers, re-forked each epoch: 3 generations) while
// one reader polls from the start and another from about 1.5 s in.
LiveRun replay_while_reading(TempDir& dir, const std::string& db) {
    const std::string data = dir.file("data.npy");
    mkdata({"npy", data, "--count", "4096", "--shape", "2048", "--dtype", "f4"});
    std::atomic<bool> done = false;
    RunResult result;
    std::thread writer([&] {
        result =
            run({cli_path(),   "replay",         "-q", "-o",          db,          "--workers",
                 "2",          "--epochs",       "3",  "--step-time", "10ms",      "--epoch-pause",
                 "300ms",      "--batch",        "32", "--interval",  "fast=50ms", "rollup=100ms",
                 "maps=500ms", "residency=50ms", data},
                std::chrono::seconds(120));
        done = true;
    });
    LiveRun out;
    std::optional<Recording> live, late;
    Cursor cursor, late_cursor;
    const auto start = std::chrono::steady_clock::now();
    while (!done) {
        if (!live) {
            try { // the recorder may not have written its schema yet
                live.emplace(db);
            } catch (const RecordingError&) {
            }
        } else if (live->has_new(cursor)) {
            RecordingData rows = live->read_new(cursor);
            if (!rows.empty()) ++out.polls_with_rows;
            if (!rows.loader.epochs.empty() && rows.meta["state"] == "recording")
                out.epochs_while_recording = true;
            out.seen_live.append(std::move(rows));
        }
        if (!late && live &&
            std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1500)) {
            late.emplace(db);
            late_cursor = late->cursor_at_end();
            out.late_rows_at_start = late_cursor.read_up_to["cache_residency"];
        }
        if (late) out.seen_late.append(late->read_new(late_cursor));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    writer.join();
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "replay failed: " + result.err);
    BOOST_REQUIRE(live && late);
    out.seen_live.append(live->read_new(cursor));
    out.seen_late.append(late->read_new(late_cursor));
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cursor_reads)

BOOST_AUTO_TEST_CASE(a_live_reader_sees_every_row_once_and_ends_with_the_full_read) {
    TempDir dir;
    const std::string db = dir.file("live.db");
    LiveRun run = replay_while_reading(dir, db);
    const RecordingData full = Recording(db).read_all();

    BOOST_TEST_MESSAGE("polls with new rows: " << run.polls_with_rows);
    BOOST_TEST(run.polls_with_rows >= 10);  // it was read while written, not once at the end
    BOOST_TEST(run.epochs_while_recording); // the loader's epochs arrive during the run
    std::vector<ProcessInfo> processes = run.seen_live.processes;
    require_same(processes, full.processes, "processes (with their exits, slots and roles)");
    require_same(run.seen_live.fast, full.fast, "fast_samples");
    require_same(run.seen_live.rollup, full.rollup, "rollup_samples");
    require_same(run.seen_live.maps, full.maps, "map_samples");
    require_same(run.seen_live.system, full.system, "system_samples");
    require_same(run.seen_live.markers, full.markers, "markers");
    require_same(run.seen_live.cache_residency, full.cache_residency, "cache_residency");
    require_same(run.seen_live.mapped_residency, full.mapped_residency, "mapped_residency");
    require_same(run.seen_live.loader.epochs, full.loader.epochs, "loader_epochs");
    require_same(run.seen_live.loader.workers, full.loader.workers, "loader_workers");
    require_same(run.seen_live.loader.progress, full.loader.progress, "loader_progress");
    BOOST_TEST(run.seen_live.loader.status == full.loader.status);
    BOOST_TEST(full.loader.epochs.size() == 3u);

    // The rows the cursor had to get right were there: bucket vectors stored as "unchanged"
    // (NULL), and process rows rewritten after their birth (exits, the loader's slots).
    const auto unchanged =
        python_sql(db, "SELECT count(*) FROM mapped_residency WHERE buckets IS NULL");
    BOOST_REQUIRE_EQUAL(unchanged.size(), 1u);
    BOOST_TEST(std::stoll(unchanged[0]) > 0);
    const auto exited = python_sql(db, "SELECT count(*) FROM processes WHERE exit_ms IS NOT NULL");
    BOOST_TEST(std::stoll(exited.at(0)) >= 6); // 3 generations of 2 workers rewritten at exit

    // Lanes: 2 slots, each held by 3 generations, matching the loader's own account of which
    // PID it forked for which worker and generation.
    const Lanes lanes = loaderlens::lanes(full);
    BOOST_REQUIRE_EQUAL(lanes.workers.size(), 2u);
    BOOST_TEST(lanes.mains.size() == 1u);
    for (const WorkerLane& lane : lanes.workers) {
        BOOST_REQUIRE_EQUAL(lane.generations.size(), 3u);
        for (std::size_t g = 0; g < 3; ++g) {
            const LaneProcess& p = lane.generations[g];
            BOOST_TEST(p.generation == static_cast<int>(g));
            if (g > 0) BOOST_TEST(p.birth_ms > lane.generations[g - 1].birth_ms);
            BOOST_TEST(p.exit_ms.has_value()); // re-forked each epoch: every one exited
            const auto declared = std::find_if(
                full.loader.workers.begin(), full.loader.workers.end(), [&](const LoaderWorker& w) {
                    return w.worker == lane.slot && w.generation == p.generation;
                });
            BOOST_REQUIRE(declared != full.loader.workers.end());
            BOOST_TEST(declared->pid == p.pid);
        }
    }

    // The reader that started mid-recording (one replay serves both, to keep the suite short):
    // its rows are the full read's rows past where it started, vectors and all.
    BOOST_REQUIRE(!run.seen_late.mapped_residency.empty());
    const std::size_t skipped =
        full.mapped_residency.size() - run.seen_late.mapped_residency.size();
    std::vector<Timed<MappedResidency>> tail(
        full.mapped_residency.begin() + static_cast<long>(skipped), full.mapped_residency.end());
    require_same(run.seen_late.mapped_residency, tail, "mapped_residency from mid-recording");
    const std::size_t cache_skipped =
        full.cache_residency.size() - run.seen_late.cache_residency.size();
    BOOST_TEST(cache_skipped == run.late_rows_at_start);
    std::vector<Timed<CacheResidency>> cache_tail(full.cache_residency.begin() +
                                                      static_cast<long>(cache_skipped),
                                                  full.cache_residency.end());
    require_same(run.seen_late.cache_residency, cache_tail, "cache_residency from mid-recording");
    for (const auto& [t, m] : run.seen_late.mapped_residency)
        BOOST_TEST(!m.buckets.empty()); // found at a keyframe, never left empty

    // The writer's keyframes: no series goes more than 31 rows without storing its vector.
    const auto longest = python_sql(
        db,
        "WITH r AS (SELECT file_id, process_id, buckets IS NULL AS unchanged, "
        "sum(buckets IS NOT NULL) OVER (PARTITION BY file_id, process_id ORDER BY rowid) AS run "
        "FROM mapped_residency) SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM r "
        "WHERE unchanged GROUP BY file_id, process_id, run)");
    BOOST_TEST(std::stoll(longest.at(0)) <= 31);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace loaderlens::test
