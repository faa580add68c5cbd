// SPDX-License-Identifier: MIT
// The `loaderlens` binary as a user runs it: record a real workload, signals, crashes, bad input.
#include "loaderlens/recording.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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

// The workload's figures, which the kernel must report: each worker maps FILE (48 MiB) and
// touches every page, and writes ANON (8 MiB) of private memory; main maps nothing of the file.
// So at the peak Σ RSS >= 2 x (48 + 8) MiB (the file once per worker), Σ PSS >= 48 + 2 x 8 MiB
// (the file once), a worker's RSS >= 56 MiB. The rest is each process's own binary, libc and
// stack: measured 2.9 MiB for main and 1.0 MiB per worker here, under the 10% allowed above.
BOOST_AUTO_TEST_CASE(record_report_export_with_generations) {
    TempDir dir;
    const std::string data = dir.file("data.bin"), out = dir.file("run.db");
    constexpr std::int64_t file_kb = 48 * mib_kb, anon_kb = 8 * mib_kb, workers = 2;
    constexpr std::int64_t hold_ms = 600, generations = 3;
    make_file(data, file_kb * 1024);
    const auto started = std::chrono::steady_clock::now();
    // PSS every 250 ms (the default is 1 s): each generation holds its peak for 600 ms only.
    auto argv = record_argv(out, workload(data, workers, anon_kb / mib_kb, generations, hold_ms));
    argv.insert(argv.begin() + 3, {"--interval", "rollup=250ms"});
    auto result = run(argv);
    const auto wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - started)
                             .count();
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording rec(out);
    BOOST_TEST(rec.meta("state") == "finished");
    BOOST_TEST(rec.meta("exit_status") == "0");
    int worker_count = 0;
    for (const auto& p : rec.processes()) {
        if (p.role != Role::worker) continue;
        ++worker_count;
        // Re-forked workers land in the same two slots, one generation per round.
        BOOST_TEST((p.slot == 0 || p.slot == 1));
        BOOST_TEST((p.generation >= 0 && p.generation <= 2));
        BOOST_TEST(p.exit_ms.has_value());
    }
    BOOST_TEST(worker_count == workers * generations);
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
    auto within = [](std::int64_t measured, std::int64_t floor, const char* what) {
        BOOST_TEST(measured >= floor, what << " " << measured << " KiB < " << floor);
        BOOST_TEST(measured <= floor * 11 / 10,
                   what << " " << measured << " KiB > " << floor << " + 10%");
    };
    const std::int64_t sum_rss = json["totals"]["peak_sum_rss"]["kib"].get<std::int64_t>();
    const std::int64_t sum_pss = json["totals"]["peak_sum_pss"]["kib"].get<std::int64_t>();
    BOOST_TEST_MESSAGE("peak Σ RSS " << sum_rss << " KiB, peak Σ PSS " << sum_pss << " KiB");
    within(sum_rss, workers * (file_kb + anon_kb), "peak Σ RSS");
    within(sum_pss, file_kb + workers * anon_kb, "peak Σ PSS");
    for (const auto& p : json["processes"])
        if (p["role"] == "worker")
            within(p["peak_rss"]["kib"].get<std::int64_t>(), file_kb + anon_kb, "worker peak RSS");

    auto csv = run({cli_path(), "export", "--format", "csv", out});
    BOOST_TEST(csv.out.starts_with(
        "t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib,unix_ns\n"));
    BOOST_TEST(csv.out.find(",smaps_rollup,") != std::string::npos);
    auto exported = nlohmann::json::parse(run({cli_path(), "export", "--format", "json", out}).out);
    // Every fast row of the recording, and one per 100 ms tick over main's lifetime (main
    // lives at least the workload's 3 x 600 ms of holding, and less than the command's wall time)
    const auto fast = rec.fast();
    BOOST_TEST(exported["series"]["fast"].size() == fast.size());
    const ProcessInfo main = rec.processes().at(0);
    BOOST_REQUIRE(main.role == Role::main && main.exit_ms.has_value());
    const std::int64_t lifetime = *main.exit_ms - main.birth_ms;
    BOOST_TEST(lifetime >= generations * hold_ms);
    BOOST_TEST(lifetime <= wall_ms);
    const auto main_rows = std::count_if(fast.begin(), fast.end(), [&](const auto& row) {
        return row.sample.process_id == main.id;
    });
    // ...plus one per marker: a marker line wakes the fast tier at once (its "epoch N" lines).
    const auto marker_count = static_cast<std::int64_t>(markers.size());
    BOOST_TEST_MESSAGE("main lived " << lifetime << " ms, " << main_rows << " fast rows, "
                                     << marker_count << " markers");
    BOOST_TEST(std::abs(main_rows - (lifetime / 100 + marker_count)) <= 2);
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
    // The recorder finishes the file, then dies of the command's signal (as a shell sees it).
    BOOST_TEST(WIFSIGNALED(*status));
    BOOST_TEST(WTERMSIG(*status) == SIGHUP);
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
    {
        // A thread that lives until the command has returned: its ID is a thread's, not a gone
        // process's, for the whole time the command looks at it.
        struct Thread {
            std::promise<void> release;
            std::atomic<pid_t> id{0};
            std::thread thread{[this, done = release.get_future()] {
                id = gettid();
                done.wait();
            }};
            ~Thread() {
                release.set_value();
                thread.join();
            }
        } thread;
        while (thread.id == 0)
            std::this_thread::sleep_for(1ms);
        const std::string task = "/proc/self/task/" + std::to_string(thread.id.load());
        auto result =
            run({cli_path(), "record", "-o", dir.file("t.db"), "--pid", std::to_string(thread.id)});
        BOOST_TEST(std::filesystem::exists(task), "the thread ended before the command returned");
        expect(result, 2, "is a thread");
        BOOST_TEST(!std::filesystem::exists(dir.file("t.db")));
    }
    expect(run({cli_path(), "record", "--cpu-budget", "nan%", "--", "true"}), 2, "--cpu-budget");
    expect(run({cli_path(), "record", "--interval", "maps=inf", "--", "true"}), 2, "--interval");
    expect(run({cli_path(), "record", "--interval", "fast=soon", "--", "true"}), 2, "--interval");

    BOOST_TEST(run(record_argv(dir.file("e.db"), {"true"})).exit_code == 0);
    expect(run({cli_path(), "record", "-q", "--no-clobber", "-o", dir.file("e.db"), "--", "true"}),
           2, "file exists");
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

// Disk full: the recording stops with one error line, the command runs on to its end and its
// exit status is returned, and what was written opens. The tmpfs holds three empty recordings
// (320 KiB today): at 160 KiB not even the first commit fits (the schema and first batch need
// ~150 KiB of WAL plus 32 KiB of -shm) and the partial file would hold nothing; three empty
// recordings' worth holds about 2 s of samples of this workload.
BOOST_AUTO_TEST_CASE(disk_full_stops_the_recording_not_the_command, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    const std::string mount_point = dir.file("full"), data = dir.file("data.bin");
    BOOST_REQUIRE(run(record_argv(dir.file("empty.db"), {"true"})).exit_code == 0);
    const auto size_kb = 3 * std::filesystem::file_size(dir.file("empty.db")) / 4096 * 4;
    std::filesystem::create_directory(mount_point);
    const std::string options = "size=" + std::to_string(size_kb) + "k,mode=0755";
    const bool mounted = mount("tmpfs", mount_point.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!precondition(mounted, std::string("cannot mount a tmpfs: ") + std::strerror(errno),
                      InCi::must_have))
        return;
    struct Unmount {
        std::string path;
        ~Unmount() { umount2(path.c_str(), MNT_DETACH); }
    } unmount{mount_point};
    make_file(data, 1 << 20);
    const std::string out = mount_point + "/run.db", ran = dir.file("ran-to-the-end");
    // 3 x 1.5 s of workload, then a mark written outside the full disk, then exit 7.
    const std::string command = workload_path() + " --file " + data +
                                " --workers 2 --anon-mib 1 --generations 3 --hold-ms 1500 "
                                ">/dev/null && echo done > " +
                                ran + " && exit 7";
    auto result = run(record_argv(out, {"sh", "-c", command}));
    BOOST_TEST(result.exit_code == 7, "exit " << result.exit_code << ": " << result.err);
    BOOST_TEST(std::filesystem::exists(ran), "the command did not run to its end");
    BOOST_TEST(one_line(result.err), "stderr: " << result.err);
    BOOST_TEST(result.err.find("recording stopped, the command goes on") != std::string::npos);
    BOOST_TEST(result.err.find("full") != std::string::npos);
    struct statvfs fs {};
    BOOST_REQUIRE(statvfs(mount_point.c_str(), &fs) == 0);
    BOOST_TEST(fs.f_bfree * fs.f_frsize < 32 * 1024u, "the disk did not fill up");

    // The partial recording opens, with what was committed before the disk filled, and does not
    // claim to be finished: its samples end seconds before the command did.
    Recording rec(out);
    BOOST_TEST(rec.processes().size() >= 3u); // sh, the workload, its first workers
    BOOST_TEST(!rec.fast().empty());
    BOOST_TEST_MESSAGE("partial recording on "
                       << size_kb << " KiB: samples end at " << rec.last_sample_ms()
                       << " ms, state '" << rec.meta("state") << "', end_ms '" << rec.meta("end_ms")
                       << "'");
    BOOST_TEST(rec.last_sample_ms() >= 500);
    BOOST_TEST(rec.last_sample_ms() < 4500); // it stopped before the command did
    BOOST_TEST(rec.meta("state") != "finished",
               "a recording stopped by a full disk says 'finished', end_ms " << rec.meta("end_ms"));
    auto report = run({cli_path(), "report", out});
    BOOST_TEST(report.exit_code == 0, report.err);
    BOOST_TEST(report.out.find(", finished") == std::string::npos, report.out);
}

BOOST_AUTO_TEST_SUITE_END()
