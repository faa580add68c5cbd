// SPDX-License-Identifier: MIT
// Read errors met through a cursor are RecordingError naming the file (never sql::Error): damage
// written into an open recording between two polls (Python's sqlite3 writes it, as another
// program would), and a residency BLOB of the wrong length met by a reader that starts mid-file
// and looks back for its keyframe. And a recording of an older schema read through a cursor.
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"
#include "made_recordings.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// A recording of one process over `ticks` fast ticks and residency rows of one file whose
// vector never changes (so NULL rows between keyframes), left unfinished: still "recording".
void write_ticks(Recorder& recorder, int first, int ticks) {
    for (int t = first; t < first + ticks; ++t) {
        SampleBatch b;
        b.t_ms = t * 100;
        if (t == 0) {
            ProcessInfo p;
            p.id = 1;
            p.key = {4242, 1};
            p.role = Role::main;
            b.born.push_back(p);
            ResidencyFile f;
            f.id = 1;
            f.path = "/data/x.npy";
            f.size_bytes = 4096 * 8;
            f.page_size = 4096;
            f.layout = BucketLayout::make(8, 2); // 2 buckets of 4 pages
            b.residency.new_files.push_back(f);
        }
        b.fast.push_back({.process_id = 1, .rss = 1000 + t});
        CacheResidency c;
        c.file_id = 1;
        c.totals.cached = 8;
        c.buckets = {4, 4};
        b.residency.cache.push_back(c);
        recorder.write(b);
        recorder.commit();
    }
}

template <typename Read> void require_recording_error(Read&& read, const std::string& path) {
    try {
        read();
        BOOST_FAIL("no error");
    } catch (const RecordingError& e) {
        BOOST_TEST(std::string(e.what()).starts_with(path + ": "), e.what());
    } catch (const std::exception& e) {
        BOOST_FAIL(std::string("not a RecordingError: ") + e.what());
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(cursor_errors)

BOOST_AUTO_TEST_CASE(damage_between_two_polls_is_a_recording_error) {
    TempDir dir;
    const std::string path = dir.file("live.db");
    Recorder recorder(path, false);
    write_ticks(recorder, 0, 5);
    Recording reading(path);
    Cursor cursor;
    BOOST_TEST(reading.read_new(cursor).fast.size() == 5u);
    write_ticks(recorder, 5, 5);
    recording_made(path); // being written (by this process), before the damage
    sqlite_exec(path, "UPDATE fast_samples SET rss_kb = 'lots' WHERE rowid = 8");
    BOOST_TEST(reading.has_new(cursor));
    require_recording_error([&] { reading.read_new(cursor); }, path);
}

BOOST_AUTO_TEST_CASE(a_damaged_keyframe_found_from_mid_file_is_a_recording_error) {
    TempDir dir;
    const std::string path = dir.file("late.db");
    Recorder recorder(path, false);
    write_ticks(recorder, 0, 40); // rows 1 and 33 store the vector, the rest NULL
    // The oracle for the layout: SQLite itself, through Python.
    const RunResult stored = run({"/usr/bin/python3", "-c",
                                  "import sqlite3, sys\n"
                                  "c = sqlite3.connect(sys.argv[1])\n"
                                  "print([r[0] for r in c.execute('SELECT rowid FROM "
                                  "cache_residency WHERE buckets IS NOT NULL')])\n",
                                  path});
    BOOST_TEST(stored.out == "[1, 33]\n");
    Recording reading(path);
    Cursor late = reading.cursor_at_end();
    write_ticks(recorder, 40, 2);
    const RecordingData rows = reading.read_new(late); // finds row 33, the keyframe
    BOOST_REQUIRE_EQUAL(rows.cache_residency.size(), 2u);
    BOOST_TEST((rows.cache_residency[0].sample.buckets == BucketCounts{4, 4}));

    Recording damaged_reading(path);
    Cursor damaged = damaged_reading.cursor_at_end();
    write_ticks(recorder, 42, 1);
    recording_made(path); // being written (by this process), before the damage
    sqlite_exec(path, "UPDATE cache_residency SET buckets = x'0102' WHERE rowid = 33");
    require_recording_error([&] { damaged_reading.read_new(damaged); }, path);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(older_schemas)

// A schema-3 recording (made from a new one by dropping what schema 4 added, with SQLite itself
// through Python): read whole and through a cursor alike, the new system figures unavailable.
BOOST_AUTO_TEST_CASE(a_schema_3_recording_reads_through_the_cursor) {
    TempDir dir;
    const std::string path = dir.file("old.db");
    {
        Recorder recorder(path, false);
        write_ticks(recorder, 0, 3);
        SampleBatch system;
        system.t_ms = 300;
        system.system = SystemSample{.mem_total = 1000, .active_file = 5};
        recorder.write(system);
        recorder.finish("finished", 400);
    }
    sqlite_exec(path, "ALTER TABLE processes DROP COLUMN revision");
    for (const char* column :
         {"active_file_kb", "inactive_file_kb", "writeback_kb", "kreclaimable_kb"})
        sqlite_exec(path, std::string("ALTER TABLE system_samples DROP COLUMN ") + column);
    sqlite_exec(path, "PRAGMA user_version = 3");
    recording_made(path); // an older schema reads alike in every consumer
    Recording old(path);
    BOOST_TEST(old.schema() == 3);
    Cursor cursor;
    RecordingData seen = old.read_new(cursor);
    seen.append(old.read_new(cursor)); // processes come again (no revisions): replaced, not added
    const RecordingData full = old.read_all();
    BOOST_REQUIRE_EQUAL(seen.processes.size(), 1u);
    BOOST_TEST(full.processes.size() == 1u);
    BOOST_TEST(seen.fast.size() == 3u);
    BOOST_TEST(seen.cache_residency.size() == 3u);
    BOOST_REQUIRE_EQUAL(full.system.size(), 1u);
    BOOST_TEST(*full.system[0].sample.mem_total == 1000);
    BOOST_TEST(!full.system[0].sample.active_file.has_value()); // not in schema 3: unavailable
}

BOOST_AUTO_TEST_SUITE_END()
