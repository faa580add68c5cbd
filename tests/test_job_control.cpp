// SPDX-License-Identifier: MIT
// Job control as SLURM and shells see it: the recorder dies of the signal that killed the command
// (after finishing the recording), a taken output name never keeps the command from running, and
// the recording names the job, step and task it ran in. The same behaviour under a real SLURM is
// tested in tests/slurm/.
#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

// `loaderlens ARGS...` run in `dir` with `environment` (NAME=VALUE) added.
RunResult run_in(const TempDir& dir, const std::vector<std::string>& environment,
                 const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{"env", "-C", dir.path().string()};
    argv.insert(argv.end(), environment.begin(), environment.end());
    argv.push_back(cli_path());
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return run(argv);
}

std::string node() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

// Starts `loaderlens record -o OUTPUT -- sh -c SCRIPT` and waits until the script has written
// its PID to `pid_file` (so a signal reaches a running command).
struct RunningRecord {
    Child recorder;
    pid_t command = 0;
    RunningRecord(const std::string& output, const std::string& pid_file, const std::string& script)
        : recorder({cli_path(), "record", "-q", "-o", output, "--", "sh", "-c",
                    "echo $$ > " + pid_file + "; " + script}) {
        for (int i = 0; i < 500 && command == 0; ++i) {
            std::this_thread::sleep_for(10ms);
            std::ifstream in(pid_file);
            in >> command;
        }
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(job_control)

// scancel sends SIGTERM: without the recorder the step dies of SIGTERM (SLURM: CANCELLED 0:15);
// a recorder that exited 143 instead made SLURM record FAILED 15:0.
BOOST_AUTO_TEST_CASE(dies_of_the_signal_that_killed_the_command) {
    TempDir dir;
    for (int sig : {SIGTERM, SIGINT, SIGKILL, SIGSEGV}) {
        BOOST_TEST_CONTEXT("signal " << sig) {
            const std::string output = dir.file("r" + std::to_string(sig) + ".db");
            RunningRecord running(output, dir.file("pid" + std::to_string(sig)), "exec sleep 30");
            BOOST_REQUIRE(running.command > 0);
            // SIGTERM and SIGINT go to the recorder, which forwards them; SIGKILL and SIGSEGV
            // (which cannot be forwarded the same way) go to the command itself.
            const bool to_recorder = sig == SIGTERM || sig == SIGINT;
            kill(to_recorder ? running.recorder.pid() : running.command, sig);
            auto status = running.recorder.wait(20s);
            BOOST_REQUIRE(status.has_value());
            BOOST_TEST(WIFSIGNALED(*status));
            BOOST_TEST((WIFSIGNALED(*status) ? WTERMSIG(*status) : -1) == sig);
            BOOST_TEST(!WCOREDUMP(*status)); // a core would be the command's, not ours
            // The recording was finished before the recorder died.
            Recording recording(output);
            BOOST_TEST(recording.finished());
            BOOST_TEST(recording.meta("exit_status") == std::to_string(128 + sig));
            BOOST_TEST(!std::filesystem::exists(output + "-wal"));
            if (to_recorder) {
                BOOST_TEST(recording.meta("signal_received") == strsignal(sig));
                const std::string at = recording.meta("signal_received_ms");
                BOOST_TEST(!at.empty());
                BOOST_TEST(std::stoll(at) >= 0);
                BOOST_TEST(std::stoll(at) <= recording.last_sample_ms() + 1000);
            }
        }
    }
}

// A command that exits 143 by itself was not killed: the recorder exits 143, it does not die.
BOOST_AUTO_TEST_CASE(an_exit_status_of_143_stays_an_exit_status) {
    TempDir dir;
    Child recorder(
        {cli_path(), "record", "-q", "-o", dir.file("a.db"), "--", "sh", "-c", "exit 143"});
    auto status = recorder.wait(20s);
    BOOST_REQUIRE(status.has_value());
    BOOST_TEST(WIFEXITED(*status));
    BOOST_TEST(WEXITSTATUS(*status) == 143);
}

// Two steps of one job with the same -o: the second still runs its command and records to the
// next free name, announced in one line; --no-clobber keeps the refusal.
BOOST_AUTO_TEST_CASE(a_taken_name_never_blocks_the_command) {
    TempDir dir;
    const std::vector<std::string> job{"SLURM_JOB_ID=41", "SLURMD_NODENAME=n1"};
    for (int step = 0; step < 3; ++step) {
        RunResult result = run_in(
            dir, job,
            {"record", "-q", "-o", "run-%j-%N.db", "--", "touch", "ran." + std::to_string(step)});
        BOOST_TEST(result.exit_code == 0, result.err);
        BOOST_TEST(std::filesystem::exists(dir.file("ran." + std::to_string(step))));
        if (step > 0) {
            const std::string next = "run-41-n1." + std::to_string(step) + ".db";
            BOOST_TEST(result.err.find("run-41-n1.db exists: recording to " + next) !=
                           std::string::npos,
                       result.err);
            BOOST_TEST(std::count(result.err.begin(), result.err.end(), '\n') == 1);
        }
    }
    for (const char* name : {"run-41-n1.db", "run-41-n1.1.db", "run-41-n1.2.db"})
        BOOST_TEST(Recording(dir.file(name)).finished(), name);

    RunResult refused = run_in(
        dir, job,
        {"record", "-q", "--no-clobber", "-o", "run-%j-%N.db", "--", "touch", "ran.refused"});
    BOOST_TEST(refused.exit_code == 2);
    BOOST_TEST(refused.err.find("run-41-n1.db: file exists") != std::string::npos, refused.err);
    BOOST_TEST(!std::filesystem::exists(dir.file("ran.refused")));
}

// Tasks that start at once with one name get one file each (the name is taken with O_EXCL).
BOOST_AUTO_TEST_CASE(tasks_racing_for_one_name_get_one_file_each) {
    TempDir dir;
    const std::string output = dir.file("same.db");
    std::vector<std::unique_ptr<Child>> tasks;
    for (int task = 0; task < 4; ++task)
        tasks.push_back(std::make_unique<Child>(
            std::vector<std::string>{cli_path(), "record", "-q", "-o", output, "--", "true"}));
    for (auto& task : tasks) {
        auto status = task->wait(30s);
        BOOST_REQUIRE(status.has_value());
        BOOST_TEST(WIFEXITED(*status));
        BOOST_TEST(WEXITSTATUS(*status) == 0);
    }
    for (const char* name : {"same.db", "same.1.db", "same.2.db", "same.3.db"})
        BOOST_TEST(Recording(dir.file(name)).finished(), name);
    BOOST_TEST(!std::filesystem::exists(dir.file("same.4.db")));
}

BOOST_AUTO_TEST_CASE(step_task_and_array_ids_in_names) {
    TempDir dir;
    const std::vector<std::string> task{"SLURM_JOB_ID=41", "SLURM_STEP_ID=3", "SLURM_PROCID=1",
                                        "SLURM_ARRAY_TASK_ID=7", "SLURMD_NODENAME=n1"};
    BOOST_TEST(run_in(dir, task, {"record", "-q", "-o", "r-%j.%s.%t.%a-%N-100%%.db", "--", "true"})
                   .exit_code == 0);
    BOOST_TEST(std::filesystem::exists(dir.file("r-41.3.1.7-n1-100%.db")));
    // Inside a job the default name is per job, step and task: two tasks, two files.
    for (const char* procid : {"SLURM_PROCID=0", "SLURM_PROCID=1"})
        BOOST_TEST(run_in(dir, {"SLURM_JOB_ID=41", "SLURM_STEP_ID=3", procid, "SLURMD_NODENAME=n1"},
                          {"record", "-q", "--", "true"})
                       .exit_code == 0);
    BOOST_TEST(std::filesystem::exists(dir.file("loaderlens-41.3.0-n1.db")));
    BOOST_TEST(std::filesystem::exists(dir.file("loaderlens-41.3.1-n1.db")));
    // A batch script has a job id and no step id.
    BOOST_TEST(
        run_in(dir, {"SLURM_JOB_ID=41", "SLURMD_NODENAME=n1"}, {"record", "-q", "--", "true"})
            .exit_code == 0);
    BOOST_TEST(std::filesystem::exists(dir.file("loaderlens-41.batch.0-n1.db")));
    // Outside SLURM: per node and recorder PID, as before.
    RunResult plain = run_in(dir, {"-u", "SLURM_JOB_ID"}, {"record", "--", "true"});
    BOOST_TEST(plain.exit_code == 0);
    const std::string prefix = "loaderlens-" + node() + "-";
    BOOST_TEST(plain.err.find("recording written to " + prefix) != std::string::npos, plain.err);
}

// The job, step, task, granted memory and CPUs are kept, under the variables' own names.
BOOST_AUTO_TEST_CASE(slurm_ids_and_grants_in_the_meta) {
    TempDir dir;
    const std::vector<std::string> task{
        "SLURM_JOB_ID=41",    "SLURM_STEP_ID=3",         "SLURM_PROCID=1",
        "SLURM_LOCALID=1",    "SLURM_MEM_PER_NODE=4000", "SLURM_CPUS_ON_NODE=2",
        "SLURMD_NODENAME=n1", "SLURM_ARRAY_TASK_ID=7",   "SLURM_JOB_NAME=train"};
    BOOST_TEST(run_in(dir, task, {"record", "-q", "-o", "m.db", "--", "true"}).exit_code == 0);
    Recording recording(dir.file("m.db"));
    for (const std::string& assignment : task) {
        const auto eq = assignment.find('=');
        std::string key = assignment.substr(0, eq);
        std::transform(key.begin(), key.end(), key.begin(), ::tolower);
        BOOST_TEST(recording.meta(key) == assignment.substr(eq + 1), key);
    }
    BOOST_TEST(recording.meta("host") == "n1");
    BOOST_TEST(recording.meta("cpus_online") == std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
    BOOST_TEST(recording.meta("slurm_mem_per_cpu").empty()); // not set: not stored as ""
}

BOOST_AUTO_TEST_SUITE_END()
