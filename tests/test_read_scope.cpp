// SPDX-License-Identifier: MIT
// Recording::read_all(ReadScope) without the mapped bucket vectors (what the report and the CSV
// export read): every other row as the whole read gives it, each mapped row's figures as SQLite
// holds them, its buckets empty. Recorded by a real replay (two workers reading a dataset).
#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <string>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(read_scope)

BOOST_AUTO_TEST_CASE(without_mapped_buckets_every_figure_is_the_whole_reads) {
    TempDir dir;
    const std::string data = dir.file("small.npy"), out = dir.file("replay.db");
    const auto made = run(
        {cli_path(), "mkdata", "npy", data, "--count", "2048", "--shape", "1024", "--dtype", "f4"});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    const auto replay = run({cli_path(), "replay", data, "--workers", "2", "--epochs", "2",
                             "--step-time", "20ms", "-q", "-o", out});
    BOOST_REQUIRE_MESSAGE(replay.exit_code == 0, replay.err);

    const Recording recording(out);
    const RecordingData whole = recording.read_all();
    const RecordingData scoped = recording.read_all(ReadScope{.mapped_buckets = false});
    // The oracle for the mapped rows: SQLite's own rows, in rowid order.
    const auto stored = sqlite_rows(out, "SELECT t_ms, file_id, process_id, mapped_pages, "
                                         "present_pages, ifnull(pss_kb, 'null') "
                                         "FROM mapped_residency ORDER BY rowid");
    BOOST_REQUIRE_MESSAGE(!stored.empty(), "the replay recorded no mapped residency");
    BOOST_REQUIRE_EQUAL(scoped.mapped_residency.size(), stored.size());
    BOOST_REQUIRE_EQUAL(whole.mapped_residency.size(), stored.size());
    for (std::size_t i = 0; i < stored.size(); ++i) {
        const auto& [t, m] = scoped.mapped_residency[i];
        BOOST_TEST_CONTEXT("mapped_residency row " << i) {
            BOOST_TEST(std::to_string(t) == stored[i][0]);
            BOOST_TEST(std::to_string(m.file_id) == stored[i][1]);
            BOOST_TEST(std::to_string(m.process_id) == stored[i][2]);
            BOOST_TEST(std::to_string(m.mapped_pages) == stored[i][3]);
            BOOST_TEST(std::to_string(m.present_pages) == stored[i][4]);
            BOOST_TEST((m.pss_kb ? std::to_string(*m.pss_kb) : "null") == stored[i][5]);
            BOOST_TEST(m.buckets.empty());
            BOOST_TEST(!whole.mapped_residency[i].sample.buckets.empty());
            BOOST_TEST((m.outside_sharers == whole.mapped_residency[i].sample.outside_sharers));
        }
    }
    // Everything else is the whole read's.
    BOOST_TEST(scoped.processes.size() == whole.processes.size());
    BOOST_TEST(scoped.fast.size() == whole.fast.size());
    BOOST_TEST(scoped.rollup.size() == whole.rollup.size());
    BOOST_TEST(scoped.maps.size() == whole.maps.size());
    BOOST_TEST(scoped.residency_files.size() == whole.residency_files.size());
    BOOST_REQUIRE_EQUAL(scoped.cache_residency.size(), whole.cache_residency.size());
    for (std::size_t i = 0; i < whole.cache_residency.size(); ++i)
        BOOST_TEST(
            (scoped.cache_residency[i].sample.buckets == whole.cache_residency[i].sample.buckets));
    BOOST_TEST(scoped.loader.epochs.size() == whole.loader.epochs.size());
    BOOST_TEST((scoped.meta == whole.meta));
}

BOOST_AUTO_TEST_SUITE_END()
