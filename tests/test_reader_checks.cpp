// SPDX-License-Identifier: MIT
// The reader's own checks: numbers in the meta, SQLite bind codes, mountinfo escapes, exit
// statuses not seen, and the loader's declared workers in replay recordings.
#include "loaderlens/cgroup_sampler.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"
#include "made_recordings.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace loaderlens;
using namespace loaderlens::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string python = "/usr/bin/python3";

json report_json(const std::string& path) {
    const auto r = run({cli_path(), "report", "--json", path});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

// Runs one SQL statement on the file with python3's sqlite3 (not ours); returns its row count.
std::string python_sql(const std::string& path, const std::string& statement,
                       const std::vector<std::string>& values = {}) {
    std::vector<std::string> argv{python, "-c",
                                  "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n"
                                  "print(c.execute(sys.argv[2], sys.argv[3:]).rowcount)\n"
                                  "c.commit()\n",
                                  path, statement};
    argv.insert(argv.end(), values.begin(), values.end());
    const auto r = run(argv);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(reader_checks)

BOOST_AUTO_TEST_CASE(meta_that_is_not_a_number_is_bad_input) {
    TempDir dir;
    const std::string data = dir.file("d.npy"), base = dir.file("base.db");
    BOOST_REQUIRE(
        run({cli_path(), "mkdata", "npy", data, "--count", "256", "--shape", "64", "--dtype", "f4"})
            .exit_code == 0);
    const auto replay =
        run({cli_path(), "replay", data, "--workers", "1", "--epochs", "1", "-q", "-o", base});
    BOOST_REQUIRE_MESSAGE(replay.exit_code == 0, replay.err);
    BOOST_REQUIRE(!Recording(base).meta("loader.data_file_cached_pages_before").empty());
    BOOST_REQUIRE(run({cli_path(), "report", base}).exit_code == 0);

    const std::vector<std::pair<std::string, std::string>> damage{
        {"end_ms", "twelve"},
        {"start_unix_ns", "12x"},
        {"interval_fast_ms", ""},
        {"interval_residency_ms", "1e3"},
        {"loader.data_file_cached_pages_before", "n/a"},
        {"writer_pid", "pid 12"},
        {"signal_received_ms", "soon"}};
    int n = 0;
    for (const auto& [key, value] : damage) {
        BOOST_TEST_CONTEXT(key) {
            const std::string file = dir.file("damaged" + std::to_string(n++) + ".db");
            fs::copy_file(base, file);
            python_sql(file, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", {key, value});
            for (const bool as_json : {false, true}) {
                std::vector<std::string> argv{cli_path(), "report", file};
                if (as_json) argv.insert(argv.begin() + 2, "--json");
                const auto r = run(argv);
                BOOST_TEST(r.exit_code == 2);
                BOOST_TEST(r.out.empty());
                BOOST_TEST(r.err == "loaderlens: " + file + ": meta " + key + " holds \"" + value +
                                        "\" where a number belongs (damaged recording?)\n");
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(an_exit_whose_status_was_not_seen_says_so) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    BOOST_REQUIRE(run({cli_path(), "record", "-q", "-o", out, "--", "sh", "-c",
                       "/bin/sleep 0.4 & wait; /bin/sleep 0.5"})
                      .exit_code == 0);
    // The first sleep's status as if it had exited between two scans, not our child: unseen.
    BOOST_REQUIRE(python_sql(out, "UPDATE processes SET exit_status=NULL WHERE id=(SELECT min(id) "
                                  "FROM processes WHERE role!='main' AND exit_ms IS NOT NULL)") ==
                  "1\n");

    const auto text = run({cli_path(), "report", out});
    BOOST_REQUIRE(text.exit_code == 0);
    int not_seen = 0, exit_0 = 0;
    for (const auto& line : lines_of(text.out)) {
        not_seen += line.ends_with(" sleep [exit not seen]");
        exit_0 += line.ends_with(" [exit 0]");
        BOOST_TEST(!line.ends_with("[exited]"));
    }
    BOOST_TEST(not_seen == 1);
    BOOST_TEST(exit_0 == 2); // main and the second sleep
    BOOST_TEST(text.out.find("Recording cut") == std::string::npos);

    const json report = report_json(out);
    BOOST_TEST(report["cut"].is_null());
    BOOST_TEST(report["being_written"] == false);
    std::map<std::string, int> ends; // "end" and exit_code of the processes
    for (const auto& p : report["processes"]) {
        ++ends[p["end"].get<std::string>() + " " + p["exit_code"].dump()];
        if (p["end"] == "exit_not_seen")
            BOOST_TEST((p["exit_signal"].is_null() && p["exit_status"].is_null() &&
                        p["exit_ms"].is_number()));
    }
    BOOST_TEST((ends == std::map<std::string, int>{{"exit 0", 2}, {"exit_not_seen null", 1}}));
}

BOOST_AUTO_TEST_CASE(bind_checks_sqlite_return_codes) {
    TempDir dir;
    sql::Database db(dir.file("bind.db"), sql::open_read_write | sql::open_create);
    auto q = db.prepare("SELECT ?1, ?2");
    BOOST_CHECK_NO_THROW(q.bind(1, std::int64_t{7}).bind(2, std::string("x")));
    BOOST_CHECK_THROW(q.bind(3, std::int64_t{1}), sql::Error);
    BOOST_CHECK_THROW(q.bind(0, std::int64_t{1}), sql::Error);
    BOOST_CHECK_THROW(q.bind(3, 1.5), sql::Error);
    BOOST_CHECK_THROW(q.bind(3, std::string("x")), sql::Error);
    BOOST_CHECK_THROW(q.bind(3, Kib(5)), sql::Error);
    BOOST_CHECK_THROW(q.bind(3, Kib()), sql::Error);
    BOOST_CHECK_THROW(q.bind_null(-1), sql::Error);
    const char bytes[] = "blob";
    BOOST_CHECK_THROW(q.bind_blob(3, bytes, sizeof bytes), sql::Error);
    try {
        q.bind(3, std::int64_t{1});
    } catch (const sql::Error& e) {
        BOOST_TEST(std::string(e.what()).find("bind parameter 3 of \"SELECT ?1, ?2\"") == 0u);
    }
    // The bindings that were accepted are there.
    BOOST_REQUIRE(q.step());
    BOOST_TEST(q.int64(0) == 7);
    BOOST_TEST(q.text(1) == "x");
}

BOOST_AUTO_TEST_CASE(mountinfo_paths_are_decoded) {
    // Captured from /proc/self/mountinfo here, with a cgroup2 hierarchy mounted for it at a path
    // holding a space, a tab, a newline and a backslash; the v1 memory line's root made the one a
    // job whose cgroup path has a space would show.
    const std::string captured =
        "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "34 30 0:31 /slurm/uid_0/job\\0407 /sys/fs/cgroup/memory rw,relatime - cgroup cgroup "
        "rw,memory\n"
        "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
        "41 26 0:37 / /tmp/mi/data\\040set\\011v2\\012new\\134x rw,relatime - cgroup2 none rw\n";
    std::vector<std::vector<std::string>> fields;
    for (const auto& line : lines_of(captured))
        fields.push_back(mountinfo_fields(line));
    BOOST_REQUIRE(fields.size() == 4u);
    BOOST_TEST(fields[3].size() == 10u);
    BOOST_TEST(fields[3][4] == "/tmp/mi/data set\tv2\nnew\\x");
    BOOST_TEST(fields[3][7] == "cgroup2");
    BOOST_TEST(fields[1][3] == "/slurm/uid_0/job 7");
    BOOST_TEST(fields[1][4] == "/sys/fs/cgroup/memory");
    BOOST_TEST(fields[1][9] == "rw,memory");
    BOOST_TEST(fields[2][4] == "/sys/fs/cgroup/unified");
    // Not an escape: left as it is.
    const std::vector<std::string> kept{"a\\08", "b\\1", "c\\"};
    BOOST_TEST(mountinfo_fields("a\\08 b\\1 c\\") == kept, boost::test_tools::per_element());
}

// Role, slot and generation of each process, in id order: "main -1 -1, worker 0 0, ...".
std::string roles(const std::string& path) {
    std::string out;
    for (const auto& p : Recording(path).processes())
        out += (out.empty() ? "" : ", ") + std::string(to_string(p.role)) + " " +
               std::to_string(p.slot) + " " + std::to_string(p.generation);
    return out;
}

BOOST_AUTO_TEST_CASE(replay_workers_the_loader_did_not_declare_become_helpers) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    Recorder recorder(out, false);
    SampleBatch batch;
    batch.t_ms = 100;
    for (int i = 0; i < 4; ++i) { // main, and the tracker's guess: three workers in slots 0-2
        ProcessInfo p;
        p.id = 1 + i;
        p.key = {static_cast<pid_t>(1000 + i), static_cast<std::uint64_t>(1 + i)};
        p.ppid = i == 0 ? 1 : 1000;
        p.parent_id = i == 0 ? 0 : 1;
        p.role = i == 0 ? Role::main : Role::worker;
        p.slot = p.generation = i == 0 ? -1 : 0;
        if (i > 0) p.slot = i - 1;
        p.birth_ms = 50 + i;
        batch.born.push_back(p);
    }
    recorder.write(batch);
    recorder.commit();
    BOOST_TEST(roles(out) == "main -1 -1, worker 0 0, worker 1 0, worker 2 0");

    LoaderRun run;
    run.status = "ok";
    run.workers = {{0, 0, 0, 1001, 51}, {1, 0, 0, 1003, 53}}; // 1002: a helper main started
    recorder.write_loader_run(run);
    // Not committed yet: a reader sees the tracker's roles, not half of the change.
    BOOST_TEST(roles(out) == "main -1 -1, worker 0 0, worker 1 0, worker 2 0");
    recorder.commit();
    BOOST_TEST(roles(out) == "main -1 -1, worker 0 0, helper -1 -1, worker 1 0");
    recorder.finish("finished", 200);
    BOOST_TEST(roles(out) == "main -1 -1, worker 0 0, helper -1 -1, worker 1 0");
    recording_made(out);
}

BOOST_AUTO_TEST_SUITE_END()
