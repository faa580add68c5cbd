// SPDX-License-Identifier: MIT
// The series API against sums computed directly in SQL (Python's sqlite3 module on the same
// file: no code under test between the file and the oracle), on a real replay's recording.
#include "loaderlens/recording.hpp"
#include "loaderlens/series.hpp"
#include "replay_support.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <sstream>

namespace loaderlens::test {
namespace {

// Rows of "t_ms value" (value "None" for SQL NULL) from Python's sqlite3.
std::vector<std::pair<std::int64_t, std::string>> sql_points(const std::string& db,
                                                             const std::string& sql) {
    const RunResult result =
        run({"/usr/bin/python3", "-c",
             "import sqlite3, sys\n"
             "c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)\n"
             "for row in c.execute(sys.argv[2]): print(*row)\n",
             db, sql});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "python3 sqlite3: " + result.err);
    std::vector<std::pair<std::int64_t, std::string>> out;
    for (const std::string& line : lines_of(result.out)) {
        std::istringstream fields(line);
        std::int64_t t = 0;
        std::string value;
        fields >> t >> value;
        out.emplace_back(t, value);
    }
    return out;
}

void require_points(const Series& series,
                    const std::vector<std::pair<std::int64_t, std::string>>& sql,
                    const char* what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_REQUIRE(!sql.empty());
        BOOST_REQUIRE_EQUAL(series.points.size(), sql.size());
        for (std::size_t i = 0; i < sql.size(); ++i) {
            const SeriesPoint& p = series.points[i];
            BOOST_REQUIRE_EQUAL(p.t_ms, sql[i].first);
            BOOST_REQUIRE_EQUAL(p.value ? std::to_string(*p.value) : std::string("None"),
                                sql[i].second);
        }
    }
}

struct Replayed {
    TempDir dir;
    std::string db = dir.file("run.db");
    RecordingData data;
    Replayed() {
        const std::string npy = dir.file("data.npy");
        mkdata({"npy", npy, "--count", "2048", "--shape", "2048", "--dtype", "f4"});
        replay(db, {"--workers", "2", "--epochs", "2", "--step-time", "20ms", "--interval",
                    "fast=50ms", "rollup=100ms", "--cpu-budget", "50%", npy});
        data = Recording(db).read_all();
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(series_api)

BOOST_AUTO_TEST_CASE(sums_per_tick_ranges_and_decimation_equal_sql) {
    Replayed run;
    // Σ RSS over the tree per fast tick.
    require_points(series(run.data, {.figure = Figure::rss}),
                   sql_points(run.db, "SELECT t_ms, sum(rss_kb) FROM fast_samples GROUP BY t_ms "
                                      "ORDER BY t_ms"),
                   "tree rss");
    // Σ PSS of worker slot 1 across its generations, per rollup tick.
    require_points(series(run.data, {.figure = Figure::pss, .selector = Selector::worker_slot(1)}),
                   sql_points(run.db, "SELECT r.t_ms, sum(r.pss_kb) FROM rollup_samples r JOIN "
                                      "processes p ON p.id = r.process_id WHERE p.role = 'worker' "
                                      "AND p.slot = 1 GROUP BY r.t_ms ORDER BY r.t_ms"),
                   "slot 1 pss");
    // USS of the main process (Private_Clean + Private_Dirty); a composite row has none: the
    // process's last row that had one is carried.
    require_points(
        series(run.data, {.figure = Figure::uss, .selector = Selector::of_role(Role::main)}),
        sql_points(run.db,
                   "SELECT r.t_ms, sum(coalesce(r.private_clean_kb + r.private_dirty_kb, "
                   "CASE WHEN r.pss_computed_kb IS NOT NULL THEN (SELECT q.private_clean_kb + "
                   "q.private_dirty_kb FROM rollup_samples q WHERE q.process_id = r.process_id "
                   "AND q.rowid < r.rowid AND q.private_clean_kb + q.private_dirty_kb IS NOT "
                   "NULL ORDER BY q.rowid DESC LIMIT 1) END)) FROM rollup_samples r JOIN "
                   "processes p ON p.id = r.process_id WHERE p.role = 'main' GROUP BY r.t_ms "
                   "ORDER BY r.t_ms"),
        "main uss");
    // The system tier, as stored.
    require_points(series(run.data, {.figure = Figure::mem_available}),
                   sql_points(run.db, "SELECT t_ms, mem_available_kb FROM system_samples ORDER BY "
                                      "rowid"),
                   "mem_available");

    // A time range, and decimation that keeps the extremes (one replay serves both checks).
    const Series all = series(run.data, {.figure = Figure::rss});
    BOOST_REQUIRE(all.points.size() > 10u);
    const std::int64_t from = all.points[all.points.size() / 2].t_ms;
    require_points(series(run.data, {.figure = Figure::rss, .from_ms = from}),
                   sql_points(run.db, "SELECT t_ms, sum(rss_kb) FROM fast_samples WHERE t_ms >= " +
                                          std::to_string(from) + " GROUP BY t_ms ORDER BY t_ms"),
                   "rss from the middle on");
    const Series few = series(run.data, {.figure = Figure::rss, .max_points = 5});
    BOOST_REQUIRE(few.points.size() <= 5u);
    const auto peak = sql_points(run.db, "SELECT t_ms, max(s) FROM (SELECT t_ms, sum(rss_kb) AS s "
                                         "FROM fast_samples GROUP BY t_ms)");
    std::int64_t highest = 0;
    for (const SeriesPoint& p : few.points)
        highest = std::max(highest, p.max.value_or(0));
    BOOST_TEST(std::to_string(highest) == peak.at(0).second); // no peak lost to decimation
    BOOST_TEST(std::to_string(*few.peak) == peak.at(0).second);
    BOOST_TEST(few.peak_ms == peak.at(0).first);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace loaderlens::test
