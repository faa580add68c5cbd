// SPDX-License-Identifier: MIT
// Damaged recordings, made from a good replay recording with SQL: every reader (report, report
// --json, the three exports) ends with one line naming the file and exit 2, or reads them right.
// Bucket BLOBs against the file's layout, JSON depth, columns by name, missing tables, wrong types,
// the integrity check's text, extreme values (docs/recording.md, "What the reader refuses").
#include "loaderlens/sqlite.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace loaderlens;
using namespace loaderlens::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A finished replay recording (two workers, two epochs, residency of its dataset), made once
// per test process and copied by each case.
const std::string& good_recording() {
    static TempDir dir;
    static std::string path;
    if (path.empty()) {
        const std::string data = dir.file("small.npy"), out = dir.file("good.db");
        const auto made = run({cli_path(), "mkdata", "npy", data, "--count", "2048", "--shape",
                               "1024", "--dtype", "f4"});
        BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
        const auto replay = run({cli_path(), "replay", data, "--workers", "2", "--epochs", "2",
                                 "--step-time", "20ms", "-q", "-o", out});
        BOOST_REQUIRE_MESSAGE(replay.exit_code == 0, replay.err);
        path = out;
    }
    return path;
}

// A copy of the good recording named `name` in `dir`, with `sql` run on it.
std::string damaged(const TempDir& dir, const std::string& name, const std::string& sql) {
    const std::string file = dir.file(name);
    fs::copy_file(good_recording(), file);
    sql::Database db(file, sql::open_read_write);
    db.exec(sql);
    return file;
}

const std::vector<std::vector<std::string>> readers{{"report"},
                                                    {"report", "--json"},
                                                    {"export"},
                                                    {"export", "--format", "json"},
                                                    {"export", "--format", "residency-csv"}};

std::vector<std::string> reader_argv(const std::vector<std::string>& reader,
                                     const std::string& file) {
    std::vector<std::string> argv{cli_path()};
    argv.insert(argv.end(), reader.begin(), reader.end());
    argv.push_back(file);
    return argv;
}

// Which readers must refuse a damaged file: all of them, or the report (an export that does not
// read the damaged part may export the rest, with exit 0); or, to keep a case short where other
// damage of the kind runs every reader, the text report alone.
enum class Refused { by_every_reader, by_the_report, by_the_text_report };

// The readers refuse `file`: exit 2, nothing on standard output, and one line on standard error
// that names the file and holds `reason`.
void expect_refused(const std::string& file, const std::string& reason,
                    Refused who = Refused::by_every_reader) {
    for (const auto& reader : readers) {
        if (who == Refused::by_the_text_report && reader.size() > 1) continue;
        if (who == Refused::by_the_text_report && reader.front() == "export") continue;
        BOOST_TEST_CONTEXT(file << ": " << reader.front()
                                << (reader.size() > 1 ? " " + reader.back() : "")) {
            const auto r = run(reader_argv(reader, file), std::chrono::seconds(10));
            if (who == Refused::by_the_report && reader.front() == "export" && r.exit_code == 0) {
                BOOST_TEST(r.err.empty());
                continue;
            }
            BOOST_TEST(r.exit_code == 2);
            BOOST_TEST(r.out.empty());
            BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
            BOOST_TEST(r.err.starts_with("loaderlens: " + file + ": "), r.err);
            BOOST_TEST(r.err.find(reason) != std::string::npos, r.err);
        }
    }
}

json report_json(const std::string& file) {
    const auto r = run({cli_path(), "report", "--json", file}, std::chrono::seconds(10));
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

} // namespace

BOOST_AUTO_TEST_SUITE(damaged_recordings)

BOOST_AUTO_TEST_CASE(the_good_recording_reads) {
    for (const auto& reader : readers) {
        const auto r = run(reader_argv(reader, good_recording()), std::chrono::seconds(10));
        BOOST_TEST(r.exit_code == 0, r.err);
        BOOST_TEST(r.err.empty());
    }
}

// D6: a bucket BLOB longer than the file's layout (the following NULL rows inherit it) was read
// against a 912-byte evicted vector: a heap over-read (at 40 MB, a segfault in a release build).
BOOST_AUTO_TEST_CASE(bucket_blobs_must_match_the_layout) {
    TempDir dir;
    const std::string first = "(SELECT min(rowid) FROM cache_residency)";
    expect_refused(
        damaged(dir, "long.db",
                "UPDATE cache_residency SET buckets=zeroblob(400000) WHERE rowid=" + first),
        "recording is damaged: cache_residency.buckets of file 1 holds 400000 bytes "
        "where its 228 buckets take 912");
    expect_refused(damaged(dir, "empty.db",
                           "UPDATE cache_residency SET buckets=zeroblob(0) WHERE rowid=" + first),
                   "cache_residency.buckets of file 1 holds 0 bytes", Refused::by_the_text_report);
    expect_refused(
        damaged(dir, "odd.db",
                "UPDATE cache_residency SET evicted_buckets=zeroblob(913) WHERE rowid=" + first),
        "cache_residency.evicted_buckets of file 1 holds 913 bytes", Refused::by_the_text_report);
    expect_refused(damaged(dir, "mapped.db",
                           "UPDATE mapped_residency SET buckets=zeroblob(4000) WHERE buckets IS "
                           "NOT NULL"),
                   "mapped_residency.buckets of file 1 holds 4000 bytes");
    expect_refused(
        damaged(dir, "text.db", "UPDATE cache_residency SET buckets='abc' WHERE rowid=" + first),
        "cache_residency.buckets holds text where a BLOB or NULL belongs",
        Refused::by_the_text_report);
}

// A residency_files row gives the layout every bucket BLOB is checked against, and the report
// multiplies its figures: it must be one a recorder writes.
BOOST_AUTO_TEST_CASE(residency_files_rows_hold_a_layout_a_recorder_writes) {
    TempDir dir;
    expect_refused(damaged(dir, "layout.db", "UPDATE residency_files SET buckets=100000000"),
                   "residency_files row 1 holds buckets 100000000");
    expect_refused(damaged(dir, "pages.db", "UPDATE residency_files SET bucket_pages=0"),
                   "residency_files row 1 holds buckets 228 of 0 pages",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "size.db", "UPDATE residency_files SET size_bytes=-1"),
                   "residency_files row 1 holds size_bytes -1", Refused::by_the_text_report);
    // A path no kernel gives, written into every row of an export.
    expect_refused(damaged(dir, "path.db",
                           "UPDATE residency_files SET path=replace(hex(zeroblob(50000)), '00', "
                           "'x')"),
                   "residency_files.path of row 1 holds 50000 bytes, longer than any path",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "object.db",
                           "UPDATE objects SET path=replace(hex(zeroblob(50000)), '00', 'x') WHERE "
                           "id=(SELECT min(id) FROM objects)"),
                   "objects.path of row 1 holds 50000 bytes, longer than any path",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "orphan.db", "UPDATE cache_residency SET file_id=7"),
                   "cache_residency has rows of file 7, which residency_files does not hold",
                   Refused::by_the_text_report);
}

// D7: 200 KB of nested brackets in meta loader.config took 79 s and 7.9 GB for `report --json`,
// then the stack.
BOOST_AUTO_TEST_CASE(loader_config_nested_too_deep_is_damage) {
    TempDir dir;
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    const std::string file =
        damaged(dir, "deep.db", "UPDATE meta SET value='" + deep + "' WHERE key='loader.config'");
    expect_refused(file,
                   "meta loader.config nests deeper than 64 levels where the loader's JSON "
                   "object belongs (damaged recording?)",
                   Refused::by_the_report);
    expect_refused(
        damaged(dir, "array.db", "UPDATE meta SET value='[1, 2]' WHERE key='loader.config'"),
        "meta loader.config holds something else", Refused::by_the_text_report);
    expect_refused(damaged(dir, "big.db",
                           "UPDATE meta SET value='{\"x\":\"' || hex(zeroblob(600000)) || '\"}' "
                           "WHERE key='loader.config'"),
                   "meta loader.config holds 1200008 bytes", Refused::by_the_text_report);
    // The loader's progress: one figure per worker, read into a vector per row.
    expect_refused(
        damaged(dir, "workers.db",
                "UPDATE loader_progress SET workers='[' || replace(hex(zeroblob(70000)), "
                "'00', '1,') || '1]'"),
        "recording is damaged: loader_progress.workers of row 1 holds 140003 "
        "characters, more than one figure per worker of any loader",
        Refused::by_the_text_report);
    // Deep but within the bound, inside a string, or elsewhere in the meta: read as it is.
    const std::string nested = std::string(30, '[') + std::string(30, ']');
    const json report =
        report_json(damaged(dir, "fine.db",
                            "UPDATE meta SET value=json_set(value, '$.extra', json('" + nested +
                                "'), '$.text', '" + deep.substr(0, 1000) +
                                "') WHERE key='loader.config'; "
                                "INSERT INTO meta VALUES('note', '" +
                                deep + "')"));
    BOOST_TEST(report["loader"]["config"]["extra"].dump() == nested);
    BOOST_TEST(report["meta"]["note"] == deep);
    // Fields of another type than the loader writes are left out of the findings, never a JSON
    // type error (a fuzz seed: "read": []).
    const json typed = report_json(damaged(
        dir, "typed.db",
        "UPDATE meta SET value=json_set(value, '$.read', json('[]'), '$.workers', 'x', '$.hdf5', "
        "3, '$.lmdb_open', json('{}')) WHERE key='loader.config'"));
    BOOST_TEST(typed["loader"]["config"]["read"].is_array());
}

// D8: the sample tables were read by position (SELECT *): a table with its columns in another
// order read shifted (exit 0, wrong figures); one without a column read the next one's values.
BOOST_AUTO_TEST_CASE(sample_tables_are_read_by_column_name) {
    TempDir dir;
    const json good = report_json(good_recording());
    std::string sql;
    for (const std::string table :
         {"rollup_samples", "map_samples", "cgroup_samples", "system_samples", "fast_samples"}) {
        sql::Database db(good_recording(), sql::open_read_only);
        std::string columns;
        for (const auto& column : db.column_names(table))
            columns = column + (columns.empty() ? "" : ", ") + columns;
        sql += "CREATE TABLE reversed AS SELECT " + columns + " FROM " + table + "; DROP TABLE " +
               table + "; ALTER TABLE reversed RENAME TO " + table + ";";
    }
    const json reordered = report_json(damaged(dir, "reordered.db", sql));
    BOOST_TEST(reordered["totals"] == good["totals"]);
    BOOST_TEST(reordered["files"] == good["files"]);
    BOOST_TEST(reordered["processes"] == good["processes"]);
    const auto export_good = run({cli_path(), "export", good_recording()});
    const auto export_reordered = run({cli_path(), "export", dir.file("reordered.db")});
    BOOST_TEST(export_reordered.exit_code == 0);
    BOOST_TEST(export_reordered.out == export_good.out);

    // Σ PSS read 686 KiB instead of 10.2 MiB: pss_anon_kb taken for pss_kb.
    expect_refused(damaged(dir, "no_pss.db", "ALTER TABLE rollup_samples DROP COLUMN pss_kb"),
                   "recording is damaged: table rollup_samples has no column pss_kb");
    expect_refused(damaged(dir, "no_swap.db", "ALTER TABLE map_samples DROP COLUMN swap_kb"),
                   "recording is damaged: table map_samples has no column swap_kb",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "no_oom.db", "ALTER TABLE cgroup_samples DROP COLUMN oom_kill"),
                   "recording is damaged: table cgroup_samples has no column oom_kill",
                   Refused::by_the_text_report);
    expect_refused(
        damaged(dir, "no_size.db", "ALTER TABLE system_samples DROP COLUMN devshm_size_kb"),
        "recording is damaged: table system_samples has no column devshm_size_kb",
        Refused::by_the_text_report);
    expect_refused(damaged(dir, "no_pid.db", "ALTER TABLE loader_workers DROP COLUMN pid"),
                   "recording is damaged: table loader_workers has no column pid",
                   Refused::by_the_text_report);
}

// D9: a missing table or column was exit 1 "loaderlens: prepare: no such table: markers", without
// the file; a value of the wrong type read as 0.
BOOST_AUTO_TEST_CASE(missing_tables_and_wrong_types_name_the_file) {
    TempDir dir;
    expect_refused(damaged(dir, "markers.db", "DROP TABLE markers"),
                   "recording is damaged: table markers is missing");
    expect_refused(damaged(dir, "residency.db", "DROP TABLE mapped_residency"),
                   "recording is damaged: table mapped_residency is missing",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "progress.db", "DROP TABLE loader_progress"),
                   "recording is damaged: table loader_progress is missing",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "t_ms.db", "ALTER TABLE tier_stats DROP COLUMN t_ms"),
                   "recording is damaged: table tier_stats has no column t_ms",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "rss.db", "UPDATE fast_samples SET rss_kb='abc'"),
                   "recording is damaged: fast_samples.rss_kb holds text where an integer or NULL "
                   "belongs",
                   Refused::by_the_report);
    expect_refused(damaged(dir, "time.db", "UPDATE markers SET t_ms=1.5"),
                   "recording is damaged: markers.t_ms holds a real number where an integer "
                   "belongs",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "epoch.db", "UPDATE loader_epochs SET samples=x'00'"),
                   "recording is damaged: loader_epochs.samples holds a BLOB where an integer "
                   "belongs",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "birth.db", "UPDATE processes SET birth_ms=NULL"),
                   "recording is damaged: processes.birth_ms holds NULL where an integer belongs",
                   Refused::by_the_text_report);
    expect_refused(damaged(dir, "state.db", "UPDATE meta SET value='abc' WHERE key='state'"),
                   "meta state holds \"abc\" where recording, finished or interrupted belongs",
                   Refused::by_the_text_report);
    // A newline in the file's name stays on the line.
    const std::string file = damaged(dir, "new\nline.db", "DROP TABLE markers");
    const auto r = run({cli_path(), "report", file});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.err == "loaderlens: " + dir.file("new\\nline.db") +
                            ": recording is damaged: table markers is missing\n");
}

// D10: SQLite's quick_check text spans lines ("*** in database main ***\nPage 4: ..."): the error
// was 2 to 4 lines.
BOOST_AUTO_TEST_CASE(integrity_problems_are_one_line) {
    TempDir dir;
    const auto pages = fs::file_size(good_recording()) / 4096;
    int refused = 0;
    for (std::uintmax_t page = 1; page < pages; page += 2) { // every other page: short under ASan
        BOOST_TEST_CONTEXT("page " << page + 1 << " zeroed") {
            const std::string file = dir.file("zero" + std::to_string(page) + ".db");
            fs::copy_file(good_recording(), file);
            fs::resize_file(file, page * 4096); // the pages after it are kept below
            {
                std::ofstream out(file, std::ios::binary | std::ios::app);
                out << std::string(4096, '\0');
            }
            std::ifstream in(good_recording(), std::ios::binary);
            in.seekg(static_cast<std::streamoff>((page + 1) * 4096));
            std::ofstream(file, std::ios::binary | std::ios::app) << in.rdbuf();
            const auto r = run({cli_path(), "report", file}, std::chrono::seconds(10));
            BOOST_TEST((r.exit_code == 0 || r.exit_code == 2));
            if (r.exit_code == 2) {
                ++refused;
                BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
                BOOST_TEST(r.err.starts_with("loaderlens: " + file + ": "), r.err);
            }
        }
    }
    BOOST_TEST(refused > 0);
}

// D11, reader side: a recording that says finished but holds no end_ms read "finished, 0.0 s
// recorded" with its processes "running".
BOOST_AUTO_TEST_CASE(finished_without_its_end_is_reported_cut) {
    TempDir dir;
    const std::string file = damaged(dir, "no_end.db", "DELETE FROM meta WHERE key='end_ms'");
    const json report = report_json(file);
    BOOST_TEST(report["finished"] == false);
    const std::int64_t last = report["cut"]["last_sample_ms"].get<std::int64_t>();
    BOOST_TEST(last > 2000);
    BOOST_TEST(report["duration_ms"] == last);
    const auto text = run({cli_path(), "report", file});
    BOOST_TEST(text.exit_code == 0);
    BOOST_TEST(text.out.find(", 0.0 s recorded") == std::string::npos);
    BOOST_TEST(text.out.find("NOT FINISHED (cut") != std::string::npos);

    // end_ms before the last sample: the real end is no earlier than the last sample.
    const json early = report_json(damaged(dir, "early.db",
                                           "UPDATE meta SET value='0' WHERE "
                                           "key='end_ms'"));
    BOOST_TEST(early["finished"] == true);
    BOOST_TEST(early["duration_ms"] == last);
}

// Minor: huge stored values overflowed signed sums (UB; seen with UBSan, and as wrapped figures).
BOOST_AUTO_TEST_CASE(extreme_values_saturate) {
    TempDir dir;
    const std::string max = "9223372036854775807", min = "-9223372036854775808";
    const json report = report_json(
        damaged(dir, "huge.db",
                "UPDATE rollup_samples SET pss_kb=" + max + ", private_clean_kb=" + max +
                    ", private_dirty_kb=" + max + "; UPDATE map_samples SET rss_kb=" + max +
                    ", pss_kb=" + max + "; UPDATE fast_samples SET rss_kb=" + max +
                    "; UPDATE loader_epochs SET start_ms=" + min + ", end_ms=" + max +
                    "; UPDATE cache_residency SET cached=" + max + "; UPDATE meta SET value='" +
                    max + "' WHERE key='loader.data_file_cached_pages_before'"));
    BOOST_TEST(report["totals"]["peak_sum_pss"]["kib"] == INT64_MAX);
    BOOST_TEST(report["totals"]["peak_sum_uss"]["kib"] == INT64_MAX);
    BOOST_TEST(report["totals"]["peak_sum_rss"]["kib"] == INT64_MAX);
    for (const auto& p : report["processes"])
        if (!p["final_kib"]["uss"].is_null()) BOOST_TEST(p["final_kib"]["uss"] == INT64_MAX);
    BOOST_TEST(report["files"][0]["tree_peak_rss"]["kib"] == INT64_MAX);
    BOOST_TEST(report["loader"]["epochs"][0]["samples_per_s"].get<double>() > 0);

    // Every reader, on extremes everywhere: a clean outcome (exit 0, or 2 with one line).
    int n = 0;
    for (const std::string& value : {max, min, std::string("-1")}) {
        const std::string file = damaged(
            dir, "extreme" + std::to_string(n++) + ".db",
            "UPDATE processes SET birth_ms=" + value + ", exit_ms=" + value +
                ", exit_status=" + value + "; UPDATE objects SET size_bytes=" + value +
                "; UPDATE rollup_samples SET t_ms=" + value +
                "; UPDATE map_samples SET private_clean_kb=" + value +
                ", private_dirty_kb=" + value + ", shared_clean_kb=" + value +
                ", shared_dirty_kb=" + value + "; UPDATE cache_residency SET cached=" + value +
                ", evicted=" + value + "; UPDATE mapped_residency SET present_pages=" + value +
                "; UPDATE loader_progress SET distinct_bytes=" + value +
                "; UPDATE meta SET value='" + value +
                "' WHERE key IN ('end_ms', 'start_unix_ns'); UPDATE processes SET "
                "slot=2147483647, generation=2147483647 WHERE role='worker'");
        // Bucket counts at the int32 limits, one way then the other: their differences (pages
        // refaulted) overflowed int.
        sql::Database db(file, sql::open_read_write);
        auto blobs = db.prepare("UPDATE cache_residency SET buckets=?1, evicted_buckets=?2 WHERE "
                                "rowid IN (SELECT rowid FROM cache_residency ORDER BY t_ms LIMIT "
                                "1 OFFSET ?3)");
        const std::vector<std::int32_t> high(228, INT32_MAX), low(228, INT32_MIN);
        for (int row = 0; row < 4; ++row) {
            const auto& cached = row % 2 ? high : low;
            const auto& evicted = row % 2 ? low : high;
            blobs.bind_blob(1, cached.data(), cached.size() * 4)
                .bind_blob(2, evicted.data(), evicted.size() * 4)
                .bind(3, std::int64_t{row})
                .run();
        }
        for (const auto& reader : readers) {
            BOOST_TEST_CONTEXT(value << " " << reader.front() << " " << reader.back()) {
                const auto r = run(reader_argv(reader, file), std::chrono::seconds(10));
                BOOST_TEST((r.exit_code == 0 || r.exit_code == 2), r.err);
                BOOST_TEST(lines_of(r.err).size() == (r.exit_code == 0 ? 0u : 1u), r.err);
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
