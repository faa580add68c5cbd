// SPDX-License-Identifier: MIT
// A recording read while `loaderlens replay` writes it: `report` shows the loader's epochs so far
// (they reach the recording as the loader reports them, not when it ends), and `tail` follows the
// run to its end. Oracle: the finished recording's own report, and the replay still running when
// the live report was taken.
#include "consumers_agree.hpp"
#include "loaderlens/recording.hpp"
#include "replay_support.hpp"
#include "support.hpp"

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <thread>

using json = nlohmann::json;

namespace loaderlens::test {

BOOST_AUTO_TEST_SUITE(live_report)

BOOST_AUTO_TEST_CASE(report_shows_epochs_so_far_and_tail_follows_to_the_end) {
    TempDir dir;
    const std::string data = dir.file("data.npy"), db = dir.file("live.db");
    mkdata({"npy", data, "--count", "4096", "--shape", "2048", "--dtype", "f4"});
    std::atomic<bool> done = false;
    RunResult replayed, tailed;
    std::thread writer([&] {
        replayed = run({cli_path(), "replay", "-q", "-o", db, "--workers", "2", "--epochs", "3",
                        "--step-time", "15ms", "--epoch-pause", "500ms", data},
                       std::chrono::seconds(120));
        done = true;
    });
    // tail from the start, once the file is there; it must end by itself when the run does.
    while (!done && !std::filesystem::exists(db))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::thread follower([&] {
        tailed = run({cli_path(), "tail", "--from-start", "--interval", "200ms", db},
                     std::chrono::seconds(120));
    });
    // The live report: poll until it shows an epoch while the recording is still being written.
    json live;
    bool epoch_while_running = false;
    std::string live_text;
    while (!done && !epoch_while_running) {
        const RunResult r = run({cli_path(), "report", "--json", db});
        if (r.exit_code == 0) {
            live = json::parse(r.out);
            epoch_while_running = live["being_written"].get<bool>() && live.contains("loader") &&
                                  !live["loader"]["epochs"].empty();
            if (epoch_while_running) live_text = run({cli_path(), "report", db}).out;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    writer.join();
    follower.join();
    BOOST_REQUIRE_MESSAGE(replayed.exit_code == 0, replayed.err);
    BOOST_REQUIRE(epoch_while_running);
    BOOST_TEST(live["loader"]["epochs"].size() < 3u); // some, not all: it was read mid-run
    BOOST_TEST(live_text.find("running (epochs so far)") != std::string::npos, live_text);

    // The finished recording holds all three; the live report's epochs are the same rows.
    const json final_report = json::parse(run({cli_path(), "report", "--json", db}).out);
    const json& epochs = final_report["loader"]["epochs"];
    BOOST_REQUIRE_EQUAL(epochs.size(), 3u);
    for (std::size_t i = 0; i < live["loader"]["epochs"].size(); ++i)
        BOOST_TEST(live["loader"]["epochs"][i] == epochs[i]);

    // tail: an epoch line per epoch, in order, then the end.
    BOOST_TEST(tailed.exit_code == 0, tailed.err);
    std::size_t at = 0;
    for (int e = 0; e < 3; ++e) {
        at = tailed.out.find("epoch " + std::to_string(e) + " done", at);
        BOOST_TEST(at != std::string::npos, "epoch " << e << " in:\n" << tailed.out);
    }
    BOOST_TEST(tailed.out.ends_with("recording finished\n"), tailed.out);
    BOOST_TEST(tailed.out.find("sum RSS") != std::string::npos);
    // Finished: report, report --json, the exports and check agree on every figure they share.
    BOOST_TEST(check_consumers_agree(db) > 20);
}

// A recording read at its very first moment is being written, never cut: the recorder's first
// transaction names its writer (meta writer_pid, host) along with state "recording". Before, the
// writer came a transaction later, and a reader in between (the dashboard following a replay it
// had just started) took the recording for one killed outright. Oracle: the recorder still runs.
BOOST_AUTO_TEST_CASE(a_recording_read_at_its_first_moment_is_being_written) {
    TempDir dir;
    for (int attempt = 0; attempt < 3; ++attempt) {
        const std::string db = dir.file("first-" + std::to_string(attempt) + ".db");
        Child recorder({cli_path(), "record", "-q", "-o", db, "--", "sleep", "1"});
        std::optional<RecordingEnd> first;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!first && std::chrono::steady_clock::now() < deadline) {
            std::error_code error;
            if (std::filesystem::file_size(db, error) == 0 || error) continue;
            try {
                first = Recording(db).end();
            } catch (const RecordingError&) { // its schema not committed yet
            }
        }
        BOOST_REQUIRE(first);
        BOOST_TEST(::kill(recorder.pid(), 0) == 0); // the recorder still ran
        BOOST_TEST((first->state == RecordingEnd::State::being_written),
                   "attempt " << attempt << ": state " << static_cast<int>(first->state));
        BOOST_TEST(first->writer_pid.value_or(0) == recorder.pid());
        BOOST_TEST(recorder.wait(std::chrono::seconds(30)).has_value());
    }
}

BOOST_AUTO_TEST_CASE(tail_refuses_what_is_not_a_recording) {
    TempDir dir;
    const std::string not_one = dir.file("notes.txt");
    make_file(not_one, 4096);
    const RunResult r = run({cli_path(), "tail", not_one});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(lines_of(r.err).size() == 1u, r.err);
    BOOST_TEST(r.err.find(not_one) != std::string::npos, r.err);
    const RunResult bad = run({cli_path(), "tail", "--interval", "5ms", not_one});
    BOOST_TEST(bad.exit_code == 2);
    BOOST_TEST(bad.err.find("--interval 5ms") != std::string::npos, bad.err);
}

BOOST_AUTO_TEST_SUITE_END()

} // namespace loaderlens::test
