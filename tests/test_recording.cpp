// SPDX-License-Identifier: MIT
// Recorder and reader: round trip, unavailable values, and files that are not (whole) recordings;
// the marker file that feeds the recording its markers.
#include "loaderlens/clock.hpp"
#include "loaderlens/export.hpp"
#include "loaderlens/marker_tail.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "made_recordings.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

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
    recording_made(path);
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
    // A live reader asks for what is newer than it has: nothing, past the end.
    Cursor cursor = rec.cursor_at_end();
    BOOST_TEST(rec.read_new(cursor).fast.empty());
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
    recording_made(path);
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
    recording_made(path); // replaced by an empty one, never finished
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

// MarkerTail (the LOADERLENS_MARKERS file): what a program writes becomes markers exactly once.
// The contract: every complete line becomes one marker; an incomplete last line waits for its
// newline; a file that became shorter than what was read was rewritten (a program that opened it
// with "w", or `: > file`), and is read again from its start, its pending partial line dropped.
// A rewrite that reaches the old length before the next poll is told from an append by the bytes
// before the offset, which changed (rewritten_in_place_loses_no_marker).
namespace {
struct MarkerFile {
    TempDir dir;
    std::string path = dir.file("markers");
    // Boot time 1 s before now: the clock reads ~1000 ms, a stamp at start+250 ms reads 250.
    std::int64_t start_boot_ns = boottime_ns() - 1'000'000'000;
    RecordingClock clock{start_boot_ns, 0};
    MarkerTail tail{path};

    void write(const std::string& text, std::ios::openmode mode = std::ios::app) {
        std::ofstream out(path, std::ios::binary | mode);
        out << text;
    }
    std::vector<std::string> poll() {
        std::vector<std::string> texts;
        for (const auto& m : tail.poll(clock))
            texts.push_back(m.text);
        return texts;
    }
};
using Texts = std::vector<std::string>;
std::string joined(const Texts& texts) {
    std::string out = "[";
    for (const auto& t : texts)
        out += (out.size() > 1 ? ", \"" : "\"") + t + "\"";
    return out + "]";
}
} // namespace

BOOST_AUTO_TEST_CASE(marker_line_written_in_two_parts_is_one_marker) {
    MarkerFile f;
    BOOST_TEST(f.poll().empty()); // no file yet
    f.write("epoch");
    BOOST_TEST(f.poll().empty()); // no newline: not a marker yet
    f.write(" 1\n");
    BOOST_TEST(f.poll() == Texts{"epoch 1"});
    BOOST_TEST(f.poll().empty()); // read once
    // A stamped line cut inside its stamp: one marker, at the stamped time.
    const std::string stamp = std::to_string(f.start_boot_ns + 250'000'000);
    f.write("@" + stamp.substr(0, 5));
    BOOST_TEST(f.poll().empty());
    f.write(stamp.substr(5) + " epoch 2\r\n\nepoch 3\nepo");
    auto markers = f.tail.poll(f.clock);
    BOOST_REQUIRE_EQUAL(markers.size(), 2u); // the empty line is no marker
    BOOST_TEST(markers[0].text == "epoch 2");
    BOOST_TEST(markers[0].t_ms == 250);
    BOOST_TEST(markers[0].source == "env-file");
    BOOST_TEST(markers[1].text == "epoch 3");
    BOOST_TEST(std::abs(markers[1].t_ms - 1000) <= 100); // unstamped: when it was read
    f.write("ch 4\n");
    BOOST_TEST(f.poll() == Texts{"epoch 4"});
}

BOOST_AUTO_TEST_CASE(truncated_marker_file_is_read_from_its_new_start) {
    MarkerFile f;
    f.write("epoch 0\nepoch 1\nepo");
    BOOST_TEST(f.poll() == (Texts{"epoch 0", "epoch 1"}));
    // Rewritten shorter ("w" mode): its lines are new, the pending "epo" belonged to the old text.
    f.write("x\n", std::ios::trunc);
    BOOST_TEST(f.poll() == Texts{"x"});
    f.write("epoch 2\n");
    BOOST_TEST(f.poll() == Texts{"epoch 2"}); // nothing of the old or the rewritten text again
    // Emptied, then written after the poll saw it empty.
    f.write("", std::ios::trunc);
    BOOST_TEST(f.poll().empty());
    f.write("epoch 3\n");
    BOOST_TEST(f.poll() == Texts{"epoch 3"});
}

// A program that writes each marker with open(path, "w") -- a plain mistake for "a" -- rewrites
// the file between two polls with a line as long as or longer than the last: the size never
// shrinks, yet the bytes before the offset changed, and the new line is a marker (found by this
// test: it was lost, fixed in 653ad94). The tail looks at the bytes only when mtime or inode
// moved; before Linux 6.13 mtime has the coarse clock's granularity (a jiffy, 1-4 ms), so the
// rewrites here are 20 ms apart, as a program's markers are (seconds apart).
BOOST_AUTO_TEST_CASE(rewritten_in_place_loses_no_marker) {
    MarkerFile f;
    f.write("epoch 0\n", std::ios::trunc);
    BOOST_TEST(f.poll() == Texts{"epoch 0"});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    f.write("epoch 1\n", std::ios::trunc); // same length
    Texts got = f.poll();
    BOOST_TEST(got == Texts{"epoch 1"}, "got " << joined(got));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    f.write("epoch 10\n", std::ios::trunc); // longer
    got = f.poll();
    BOOST_TEST(got == Texts{"epoch 10"}, "got " << joined(got));
}

BOOST_AUTO_TEST_SUITE_END()
