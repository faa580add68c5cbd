// Recorder and reader: round trip, unavailable values, and files that are not (whole) recordings.
#include "loaderlens/export.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

SampleBatch example_batch() {
    SampleBatch b;
    b.t_ms = 100;
    ProcessInfo main;
    main.id = 1;
    main.key = {1234, 99};
    main.comm = "python3";
    main.role = Role::main;
    ProcessInfo worker = main;
    worker.id = 2;
    worker.key = {1235, 100};
    worker.role = Role::worker;
    worker.slot = 0;
    worker.generation = 0;
    worker.parent_id = 1;
    b.born = {main, worker};
    FastSample f;
    f.process_id = 2;
    f.rss = 5000;
    f.rss_anon = 1000; // rss_file left unavailable on purpose
    b.fast.push_back(f);
    RollupSample r;
    r.process_id = 2;
    r.rss = 5000;
    r.pss = 2500;
    r.private_clean = 10;
    r.private_dirty = 990;
    b.rollup.push_back(r);
    MapsSample m{2,
                 {MappedObject{.kind = MappingKind::file,
                               .path = "/data/x.npy",
                               .inode = 7,
                               .size_kb = 4096,
                               .rss_kb = 4000,
                               .pss_kb = 1000}}};
    b.maps.push_back(m);
    b.markers.push_back({100, "env-file", "epoch 1"});
    b.unavailable.push_back({2, "rollup", "smaps_rollup: permission denied"});
    b.unavailable.push_back({2, "rollup", "smaps_rollup: permission denied"}); // stored once
    return b;
}

std::string finished_recording(const TempDir& dir) {
    const std::string path = dir.file("run.db");
    Recorder recorder(path, false);
    recorder.write(example_batch());
    recorder.finish("finished", 200);
    return path;
}

} // namespace

BOOST_AUTO_TEST_SUITE(recording)

BOOST_AUTO_TEST_CASE(round_trip) {
    TempDir dir;
    Recording rec(finished_recording(dir));
    BOOST_TEST(rec.finished());
    BOOST_TEST(rec.meta("end_ms") == "200");
    auto processes = rec.processes();
    BOOST_REQUIRE_EQUAL(processes.size(), 2u);
    BOOST_TEST(processes[1].slot == 0);
    BOOST_TEST(processes[1].parent_id == 1);
    BOOST_TEST(processes[0].slot == -1);
    auto fast = rec.fast();
    BOOST_REQUIRE_EQUAL(fast.size(), 1u);
    BOOST_TEST(*fast[0].sample.rss == 5000);
    BOOST_TEST(!fast[0].sample.rss_file.has_value()); // unavailable stays unavailable, never 0
    auto rollup = rec.rollup();
    BOOST_REQUIRE_EQUAL(rollup.size(), 1u);
    BOOST_TEST(*rollup[0].sample.uss() == 1000);
    BOOST_TEST(!rollup[0].sample.pss_anon.has_value());
    BOOST_TEST(rec.maps().size() == 1u);
    BOOST_TEST(rec.objects().at(0).path == "/data/x.npy");
    BOOST_TEST(rec.markers().at(0).text == "epoch 1");
    BOOST_TEST(rec.unavailable().size() == 1u);
    BOOST_TEST(rec.fast(100).empty()); // live readers ask for what is newer than they have
    // finish() folded the WAL in: the recording is one file.
    BOOST_TEST(!std::filesystem::exists(dir.file("run.db-wal")));
}

BOOST_AUTO_TEST_CASE(json_survives_bytes_that_are_not_utf8) {
    // The kernel cuts comm at 15 bytes, maybe inside a UTF-8 character; paths may be Latin-1.
    TempDir dir;
    const std::string path = dir.file("latin.db");
    {
        Recorder recorder(path, false);
        SampleBatch batch = example_batch();
        batch.born[1].comm = "xxxxxxxxxxxxxx\xc3";
        batch.born[1].cmdline = "python caf\xe9.py";
        recorder.write(batch);
        recorder.finish("finished", 200);
    }
    Recording rec(path);
    std::string report;
    BOOST_REQUIRE_NO_THROW(report = render_report_json(build_report(rec)));
    BOOST_TEST(nlohmann::json::parse(report)["processes"].size() == 2u);
    std::ostringstream exported;
    BOOST_REQUIRE_NO_THROW(export_json(rec, exported));
    BOOST_TEST(nlohmann::json::parse(exported.str())["processes"][1]["cmdline"]
                   .get<std::string>()
                   .starts_with("python caf"));
}

BOOST_AUTO_TEST_CASE(refuses_to_overwrite) {
    TempDir dir;
    const std::string path = finished_recording(dir);
    BOOST_CHECK_THROW(Recorder(path, false), RecorderError);
    BOOST_CHECK_NO_THROW(Recorder(path, true));
    BOOST_CHECK_THROW(Recorder(dir.file("no/such/dir/run.db"), false), RecorderError);
}

BOOST_AUTO_TEST_CASE(rejects_what_is_not_a_recording) {
    TempDir dir;
    auto expect_error = [](const std::string& path, const std::string& words) {
        try {
            Recording rec(path);
            BOOST_ERROR("opened " << path);
        } catch (const RecordingError& e) {
            const std::string message = e.what();
            BOOST_TEST(message.find(words) != std::string::npos, message);
            BOOST_TEST(message.find('\n') == std::string::npos); // one line
        }
    };
    expect_error(dir.file("missing.db"), "No such file");
    std::ofstream(dir.file("text.db")) << "hello, this is not a database at all\n";
    expect_error(dir.file("text.db"), "not a loaderlens recording");
    std::ofstream(dir.file("empty.db")).close();
    expect_error(dir.file("empty.db"), "empty file");
    expect_error(dir.path().string(), "directory");
    {
        sql::Database other(dir.file("other.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        other.exec("CREATE TABLE t(x)");
    }
    expect_error(dir.file("other.db"), "not a loaderlens recording");

    // A truncated copy of a real recording.
    const std::string whole = finished_recording(dir);
    const auto size = std::filesystem::file_size(whole);
    std::filesystem::copy_file(whole, dir.file("cut.db"));
    std::filesystem::resize_file(dir.file("cut.db"), size / 2);
    expect_error(dir.file("cut.db"), "damaged or truncated");
}

BOOST_AUTO_TEST_SUITE_END()
