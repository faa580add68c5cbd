// The `loaderlens` binary as a user runs it: record a real workload, signals, crashes, bad input.
#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> record_argv(const std::string& output, std::vector<std::string> command) {
    std::vector<std::string> argv{cli_path(), "record", "-q", "-o", output, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

std::int64_t unix_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace

BOOST_AUTO_TEST_SUITE(cli)

BOOST_AUTO_TEST_CASE(record_report_export_with_generations) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), out = dir.file("run.db");
    make_file(data, 8 << 20);
    auto result = run(record_argv(out, workload(data, 2, 2, 3, 600)));
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording rec(out);
    BOOST_TEST(rec.meta("state") == "finished");
    BOOST_TEST(rec.meta("exit_status") == "0");
    int workers = 0;
    for (const auto& p : rec.processes()) {
        if (p.role != Role::worker) continue;
        ++workers;
        // Re-forked workers land in the same two slots, one generation per round.
        BOOST_TEST((p.slot == 0 || p.slot == 1));
        BOOST_TEST((p.generation >= 0 && p.generation <= 2));
        BOOST_TEST(p.exit_ms.has_value());
    }
    BOOST_TEST(workers == 6);
    auto markers = rec.markers();
    BOOST_REQUIRE_EQUAL(markers.size(), 3u);
    BOOST_TEST(markers[2].text == "epoch 2");

    auto report = run({cli_path(), "report", out});
    BOOST_TEST(report.exit_code == 0);
    BOOST_TEST(report.out.find("worker 1 (gen 2)") != std::string::npos, report.out);
    BOOST_TEST(report.out.find(data) != std::string::npos);
    BOOST_TEST(report.out.find("Σ PSS") != std::string::npos);
    auto json = nlohmann::json::parse(run({cli_path(), "report", "--json", out}).out);
    BOOST_TEST(json["processes"].size() == 7u);
    BOOST_TEST(json["totals"]["peak_sum_rss"]["kib"].get<std::int64_t>() > 2 * 8 * 1024);
    auto csv = run({cli_path(), "export", "--format", "csv", out});
    BOOST_TEST(csv.out.starts_with(
        "t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib\n"));
    BOOST_TEST(csv.out.find(",smaps_rollup,") != std::string::npos);
    auto exported = nlohmann::json::parse(run({cli_path(), "export", "--format", "json", out}).out);
    BOOST_TEST(exported["series"]["fast"].size() > 10u);
}

BOOST_AUTO_TEST_CASE(sigterm_is_forwarded_and_the_recording_finished) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), out = dir.file("run.db");
    make_file(data, 1 << 20);
    auto command = workload(data, 2, 1);
    command.insert(command.end(), {"--term-exit", "42"});
    Child recorder(record_argv(out, command), false);
    BOOST_REQUIRE(recorder.wait_for_line("ready", 20s));
    std::this_thread::sleep_for(300ms);
    kill(recorder.pid(), SIGTERM); // as scancel does
    auto status = recorder.wait(20s);
    BOOST_REQUIRE(status.has_value());
    BOOST_TEST(WIFEXITED(*status));
    BOOST_TEST(WEXITSTATUS(*status) == 42); // the command got SIGTERM and its status came back
    Recording rec(out);
    BOOST_TEST(rec.finished());
    BOOST_TEST(rec.meta("exit_status") == "42");
    BOOST_TEST(rec.meta("stop_reason") == "Terminated");
    BOOST_TEST(!std::filesystem::exists(out + "-wal"));
}

BOOST_AUTO_TEST_CASE(sighup_is_forwarded) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), out = dir.file("run.db");
    make_file(data, 1 << 20);
    Child recorder(record_argv(out, workload(data, 1, 1)), false);
    BOOST_REQUIRE(recorder.wait_for_line("ready", 20s));
    kill(recorder.pid(), SIGHUP); // the workload does not handle SIGHUP: it dies of it
    auto status = recorder.wait(20s);
    BOOST_REQUIRE(status.has_value());
    BOOST_TEST(WEXITSTATUS(*status) == 128 + SIGHUP);
    Recording rec(out);
    BOOST_TEST(rec.meta("state") == "interrupted");
    BOOST_TEST(rec.meta("exit_signal") == "Hangup");
}

BOOST_AUTO_TEST_CASE(sigkill_leaves_a_readable_recording) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), out = dir.file("run.db");
    make_file(data, 1 << 20);
    // The orphaned workload comes to us, to be killed below; undone even if a REQUIRE fails.
    struct Subreaper {
        Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
        ~Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
    } subreaper;
    Child recorder(record_argv(out, workload(data, 2, 1)), false);
    BOOST_REQUIRE(recorder.wait_for_line("ready", 20s));

    // Meanwhile, a reader opens the recording that is being written.
    std::this_thread::sleep_for(1500ms);
    {
        Recording live(out);
        BOOST_TEST(!live.finished());
        BOOST_TEST(live.processes().size() == 3u);
        BOOST_TEST(live.fast().size() > 5u);
    }
    std::this_thread::sleep_for(1000ms);
    const std::int64_t killed_at = unix_ms_now();
    kill(recorder.pid(), SIGKILL);
    recorder.wait(5s);

    Recording rec(out);
    BOOST_TEST(!rec.finished());
    const std::int64_t start_ms = std::stoll(rec.meta("start_unix_ns")) / 1'000'000;
    const std::int64_t last = start_ms + rec.last_sample_ms();
    BOOST_TEST(killed_at - last <= 1000, "data ends " << killed_at - last << " ms before the kill");
    auto report = run({cli_path(), "report", out});
    BOOST_TEST(report.exit_code == 0);
    BOOST_TEST(report.out.find("NOT FINISHED") != std::string::npos);

    // The workload's workers die with it (PR_SET_PDEATHSIG); reap all three.
    kill(static_cast<pid_t>(std::stoll(rec.meta("root_pid"))), SIGKILL);
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < deadline;) {
        if (waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) break;
        std::this_thread::sleep_for(10ms);
    }
}

BOOST_AUTO_TEST_CASE(markers_from_a_command_that_changes_directory) {
    TempDir dir;
    const std::string out = dir.file("m.db");
    // A relative -o: the marker file must still be found after the command's `cd`.
    auto result = run({"sh", "-c",
                       "cd " + dir.path().string() + " && " + cli_path() +
                           " record -q -o m.db -- sh -c 'cd / && echo \"epoch 7\" >> "
                           "\"$LOADERLENS_MARKERS\" && sleep 0.3'"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording rec(out);
    BOOST_REQUIRE_EQUAL(rec.markers().size(), 1u);
    BOOST_TEST(rec.markers()[0].text == "epoch 7");
    BOOST_TEST(!std::filesystem::exists(out + ".markers")); // ours, removed at the end
}

BOOST_AUTO_TEST_CASE(output_name_expands_job_node_and_pid) {
    TempDir dir;
    auto result = run({"env", "SLURM_JOB_ID=4242", "SLURMD_NODENAME=gpu07", cli_path(), "record",
                       "-q", "-o", dir.file("run-%j-%N-%p-100%%.db"), "--", "true"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        names.push_back(entry.path().filename().string());
    BOOST_REQUIRE_EQUAL(names.size(), 1u);
    BOOST_TEST(names[0].starts_with("run-4242-gpu07-"));
    BOOST_TEST(names[0].ends_with("-100%.db"));
    BOOST_TEST(Recording(dir.file(names[0])).meta("slurm_job_id") == "4242");
}

BOOST_AUTO_TEST_CASE(exit_status_of_the_command) {
    TempDir dir;
    auto exit3 = run(record_argv(dir.file("a.db"), {"sh", "-c", "exit 3"}));
    BOOST_TEST(exit3.exit_code == 3);
    auto killed = run(record_argv(dir.file("b.db"), {"sh", "-c", "kill -9 $$"}));
    BOOST_TEST(killed.exit_code == 137);
    BOOST_TEST(Recording(dir.file("b.db")).meta("exit_status") == "137");
}

BOOST_AUTO_TEST_CASE(bad_input_gets_one_line_and_an_exit_code) {
    TempDir dir;
    auto expect = [](const RunResult& r, int code, const std::string& words) {
        BOOST_TEST(r.exit_code == code, "exit " << r.exit_code << ": " << r.err);
        BOOST_TEST(one_line(r.err), "stderr: " << r.err);
        BOOST_TEST(r.err.find(words) != std::string::npos, "stderr: " << r.err);
    };
    expect(run({cli_path(), "record", "-o", dir.file("p.db"), "--pid", "999999"}), 2,
           "no such process");
    BOOST_TEST(!std::filesystem::exists(dir.file("p.db")));
    expect(run(record_argv(dir.file("c.db"), {"/no/such/command"})), 127, "/no/such/command");
    BOOST_TEST(!std::filesystem::exists(dir.file("c.db")));
    const std::string not_executable = dir.file("script.sh");
    std::ofstream(not_executable) << "#!/bin/sh\n";
    expect(run(record_argv(dir.file("x.db"), {not_executable})), 126, "Permission denied");
    expect(run(record_argv(dir.file("no/dir/r.db"), {"true"})), 2, "cannot create");
    expect(run({cli_path(), "record", "-o", dir.file("n.db")}), 2, "nothing to record");
    expect(run({cli_path(), "record", "-o", dir.file("z.db"), "--pid", "0"}), 2,
           "not a process ID");
    pid_t zombie = fork();
    if (zombie == 0) _exit(0);
    siginfo_t info{};
    waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT);
    expect(run({cli_path(), "record", "-o", dir.file("z.db"), "--pid", std::to_string(zombie)}), 2,
           "zombie");
    waitpid(zombie, nullptr, 0);
    pid_t thread_id = 0;
    std::thread thread([&] {
        thread_id = gettid();
        std::this_thread::sleep_for(200ms);
    });
    while (thread_id == 0)
        std::this_thread::sleep_for(1ms);
    expect(run({cli_path(), "record", "-o", dir.file("t.db"), "--pid", std::to_string(thread_id)}),
           2, "is a thread");
    thread.join();
    expect(run({cli_path(), "record", "--cpu-budget", "nan%", "--", "true"}), 2, "--cpu-budget");
    expect(run({cli_path(), "record", "--interval", "maps=inf", "--", "true"}), 2, "--interval");
    expect(run({cli_path(), "record", "--interval", "fast=soon", "--", "true"}), 2, "--interval");

    BOOST_TEST(run(record_argv(dir.file("e.db"), {"true"})).exit_code == 0);
    expect(run(record_argv(dir.file("e.db"), {"true"})), 2, "file exists");
    BOOST_TEST(run({cli_path(), "record", "-q", "--force", "-o", dir.file("e.db"), "--", "true"})
                   .exit_code == 0);

    std::ofstream(dir.file("notes.txt")) << "not a recording\n";
    expect(run({cli_path(), "report", dir.file("notes.txt")}), 2, "not a loaderlens recording");
    expect(run({cli_path(), "report", dir.file("missing.db")}), 2, "No such file");
    std::filesystem::copy_file(dir.file("e.db"), dir.file("cut.db"));
    std::filesystem::resize_file(dir.file("cut.db"),
                                 std::filesystem::file_size(dir.file("e.db")) / 2);
    expect(run({cli_path(), "report", dir.file("cut.db")}), 2, "damaged or truncated");
    expect(run({cli_path(), "export", "--format", "xml", dir.file("e.db")}), 2, "--format");
}

BOOST_AUTO_TEST_CASE(attach_to_a_running_pid) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), out = dir.file("attach.db");
    make_file(data, 4 << 20);
    Child target(workload(data, 2, 1, 1, 2500));
    BOOST_REQUIRE(target.wait_for_line("ready", 20s));
    auto result =
        run({cli_path(), "record", "-q", "-o", out, "--pid", std::to_string(target.pid())});
    BOOST_TEST(result.exit_code == 0, result.err);
    Recording rec(out);
    BOOST_TEST(rec.meta("mode") == "attach");
    BOOST_TEST(rec.processes().size() == 3u);
    BOOST_TEST(rec.finished());
}

BOOST_AUTO_TEST_SUITE_END()
