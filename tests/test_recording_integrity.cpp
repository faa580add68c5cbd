// SPDX-License-Identifier: MIT
// Damaged and cut recordings: what `report` says of a recording whose recorder was killed, or
// whose -wal file was lost (the reader's other checks: test_reader_checks.cpp).
#include "loaderlens/cgroup_sampler.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/sqlite.hpp"
#include "made_recordings.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string python = "/usr/bin/python3";

// As the report prints a time.
std::string secs(std::int64_t ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms) / 1000.0);
    return text;
}

json report_json(const std::string& path) {
    const auto r = run({cli_path(), "report", "--json", path});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

// Polls the recording being written until `ready` holds for it (it may not open at first).
template <typename Ready> bool wait_for(const std::string& path, Ready ready) {
    for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end;
         std::this_thread::sleep_for(100ms)) {
        try {
            if (ready(Recording(path))) return true;
        } catch (const RecordingError&) {
        }
    }
    return false;
}

// `loaderlens record -o out -- command`, killed with SIGKILL once it has sampled for a while; with
// `term_first`, a SIGTERM reaches the recorder first (the command ignores it, as a job that is
// slow to stop) and is noted in the recording before the kill. The command is killed too.
void record_and_kill(const std::string& out, const std::vector<std::string>& command,
                     bool term_first) {
    std::vector<std::string> argv{cli_path(), "record", "-q", "-o", out, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    Child recorder(argv);
    BOOST_REQUIRE(wait_for(out, [](const Recording& r) { return r.last_sample_ms() >= 800; }));
    if (term_first) {
        kill(recorder.pid(), SIGTERM);
        BOOST_REQUIRE(wait_for(out, [](const Recording& r) {
            return !r.meta("signal_received").empty() && !r.meta("signal_received_ms").empty();
        }));
        std::this_thread::sleep_for(600ms); // samples go on after the signal
    }
    // Still being written: not cut, and its duration is its last sample so far.
    const auto live = run({cli_path(), "report", out});
    BOOST_TEST(live.exit_code == 0);
    BOOST_TEST(live.out.find("Recording still being written by loaderlens PID " +
                             std::to_string(recorder.pid()) + " on this host") !=
               std::string::npos);
    BOOST_TEST(live.out.find("Recording cut") == std::string::npos);
    const json live_report = report_json(out);
    BOOST_TEST(live_report["cut"].is_null());
    BOOST_TEST(live_report["being_written"].get<bool>());
    BOOST_TEST(live_report["duration_ms"].get<std::int64_t>() >= 800);

    kill(recorder.pid(), SIGKILL);
    BOOST_REQUIRE(recorder.wait(5s));
    kill(-recorder.pid(), SIGKILL); // the command and its children: still in the recorder's group
}

// What `report` says of a cut recording: the second line, the run line, the header, the JSON.
void check_cut(const std::string& out, const std::string& signal_text, const json& signal,
               const json& signal_ms) {
    const std::int64_t last = Recording(out).last_sample_ms();
    BOOST_TEST(last >= 800);
    const auto text = run({cli_path(), "report", out});
    BOOST_TEST(text.exit_code == 0);
    const auto lines = lines_of(text.out);
    BOOST_REQUIRE(lines.size() > 2u);
    BOOST_TEST(lines[1] ==
               "Recording cut: the recorder stopped without finishing; last sample at " +
                   secs(last) + "; " + signal_text);
    // The first screen's run line, under the notice; the details' host line.
    BOOST_TEST(lines[2].starts_with("  " + secs(last) + ", cut: main"), lines[2]);
    const auto host = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
        return line.starts_with("  host ");
    });
    BOOST_REQUIRE(host != lines.end());
    BOOST_TEST(host->find(secs(last) + " recorded, NOT FINISHED (cut") != std::string::npos);
    const json report = report_json(out);
    BOOST_TEST(report["finished"] == false);
    BOOST_TEST(report["being_written"] == false);
    BOOST_TEST(report["duration_ms"] == last);
    const json cut{{"last_sample_ms", last}, {"signal", signal}, {"signal_ms", signal_ms}};
    BOOST_TEST(report["cut"] == cut);
}

// Copies `from` (and those of its -wal and -shm named in `suffixes`) into `dir`.
std::string copy_recording(const std::string& from, const fs::path& dir,
                           const std::vector<std::string>& suffixes) {
    fs::create_directories(dir);
    const std::string to = (dir / fs::path(from).filename()).string();
    fs::copy_file(from, to);
    for (const auto& suffix : suffixes)
        fs::copy_file(from + suffix, to + suffix);
    return to;
}

bool wal_mode_header(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char header[20] = {};
    in.read(header, sizeof header);
    return in && header[18] == 2 && header[19] == 2;
}

} // namespace

BOOST_AUTO_TEST_SUITE(recording_integrity)

BOOST_AUTO_TEST_CASE(recorder_killed_outright_is_reported_cut) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    record_and_kill(out, {"sleep", "30"}, false);
    check_cut(out,
              "no signal came first (killed outright, e.g. SIGKILL from SLURM's OverMemoryKill or "
              "the OOM killer)",
              nullptr, nullptr);
}

BOOST_AUTO_TEST_CASE(recorder_killed_after_a_sigterm_is_reported_cut_with_the_signal) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    record_and_kill(out, {"sh", "-c", "trap '' TERM; sleep 30"}, true);
    const auto signal_ms = Recording(out).meta_number("signal_received_ms");
    BOOST_REQUIRE(signal_ms.has_value());
    BOOST_TEST(*signal_ms < Recording(out).last_sample_ms());
    check_cut(out, "Terminated received at " + secs(*signal_ms), "Terminated", *signal_ms);
}

BOOST_AUTO_TEST_CASE(a_copy_without_its_wal) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    record_and_kill(out, {"sleep", "30"}, false);
    const std::int64_t last = Recording(out).last_sample_ms();

    // Copied alone: its data (here all of it: no checkpoint yet) is in the -wal left behind.
    const std::string alone = copy_recording(out, dir.path() / "alone", {});
    BOOST_REQUIRE(wal_mode_header(alone));
    const auto refused = run({cli_path(), "report", alone});
    BOOST_TEST(refused.exit_code == 2);
    BOOST_TEST(refused.out.empty());
    BOOST_TEST(refused.err == "loaderlens: " + alone + ": the recording's data is in " + alone +
                                  "-wal, which is missing: copy run.db-wal (and run.db-shm) "
                                  "along with run.db\n");
    BOOST_TEST(run({cli_path(), "report", "--json", alone}).exit_code == 2);
    BOOST_TEST(!fs::exists(alone + "-wal")); // the reader made no empty one to hide the loss

    // Copied with its -wal but not the -shm: all there, and nothing created beside it.
    const std::string with_wal = copy_recording(out, dir.path() / "with_wal", {"-wal"});
    const json report = report_json(with_wal);
    BOOST_TEST(report["duration_ms"].get<std::int64_t>() == last);
    BOOST_TEST(report["missing_wal"].is_null());
    BOOST_TEST(report["processes"].size() == 1u);
    BOOST_TEST(!fs::exists(with_wal + "-shm"));
}

BOOST_AUTO_TEST_CASE(a_copy_with_its_wal_in_a_read_only_directory, *LOADERLENS_MAY_SKIP) {
    if (!precondition(getuid() == 0, "needs root to read as another user (nobody)",
                      InCi::must_have) ||
        !precondition(fs::exists("/usr/bin/setpriv"), "needs setpriv (util-linux)",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string out = dir.file("run.db");
    record_and_kill(out, {"sleep", "30"}, false);
    const std::int64_t last = Recording(out).last_sample_ms();

    // A directory that the reader (nobody) may not write to, holding FILE and FILE-wal.
    fs::permissions(dir.path(), fs::perms(0755));
    const fs::path shelf = dir.path() / "shelf";
    const std::string copy = copy_recording(out, shelf, {"-wal"});
    fs::permissions(shelf, fs::perms(0555));
    fs::permissions(copy, fs::perms(0444));
    fs::permissions(copy + "-wal", fs::perms(0444));
    const auto js = run({"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                         cli_path(), "report", "--json", copy});
    fs::permissions(shelf, fs::perms(0755)); // so that TempDir can go
    BOOST_REQUIRE_MESSAGE(js.exit_code == 0, js.err);
    const json report = json::parse(js.out);
    BOOST_TEST(report["duration_ms"].get<std::int64_t>() == last);
    BOOST_TEST(report["cut"]["last_sample_ms"].get<std::int64_t>() == last);
    BOOST_TEST(!fs::exists(copy + "-shm"));
}

BOOST_AUTO_TEST_CASE(a_copy_without_its_wal_that_has_data_is_reported_with_a_warning) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    BOOST_REQUIRE(run({cli_path(), "record", "-q", "-o", out, "--", "sleep", "0.5"}).exit_code ==
                  0);
    // What a killed recorder leaves after SQLite checkpointed part of its WAL: the main file in
    // WAL mode with data, and newer rows (here one marker) only in FILE-wal.
    const auto writer = run({python, "-c",
                             "import os, sqlite3, sys\n"
                             "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                             "c.execute('PRAGMA journal_mode=WAL')\n"
                             "c.execute(\"INSERT INTO markers(t_ms, source, text) VALUES(100, "
                             "'test', 'in the wal')\")\n"
                             "os._exit(0)\n",
                             out});
    BOOST_REQUIRE_MESSAGE(writer.exit_code == 0, writer.err);
    BOOST_REQUIRE(fs::exists(out + "-wal"));
    const std::string alone = copy_recording(out, dir.path() / "alone", {});

    const auto text = run({cli_path(), "report", alone});
    BOOST_REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    const auto lines = lines_of(text.out);
    BOOST_REQUIRE(lines.size() > 2u);
    BOOST_TEST(lines[1] == "Warning: " + alone +
                               "-wal is missing: the newest data of this recording may be in it; "
                               "copy run.db-wal (and run.db-shm) along with run.db");
    BOOST_TEST(text.out.find("in the wal") == std::string::npos);
    const json report = report_json(alone);
    BOOST_TEST(report["missing_wal"].get<std::string>() == alone + "-wal");
    BOOST_TEST(report["markers"].size() == 0u);
    BOOST_TEST(report["cut"].is_null()); // the main file holds the recorder's end

    // The original, with its -wal, has the marker and no warning.
    const auto whole = run({cli_path(), "report", out});
    BOOST_TEST(whole.out.find("in the wal") != std::string::npos);
    BOOST_TEST(whole.out.find("Warning:") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_recorder_closed_without_finishing_leaves_no_lost_wal_behind) {
    TempDir dir;
    const std::string out = dir.file("run.db");
    {
        Recorder recorder(out, false);
        recorder.set_meta("start_unix_ns", "0");
        recorder.commit();
    } // an error path: no finish()
    BOOST_TEST(!fs::exists(out + "-wal"));
    BOOST_TEST(!wal_mode_header(out));
    Recording recording(out);
    BOOST_TEST(recording.missing_wal().empty());
    recording_made(out); // unfinished: every consumer reads it the same
}

BOOST_AUTO_TEST_SUITE_END()
