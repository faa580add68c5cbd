// SPDX-License-Identifier: MIT
// Which children are workers: forked without exec from a loader process, spawn code,
// pt_data_worker, or --worker-match; a child that exec'd another program is a helper. Checked on
// the rule itself, on real process trees, and on real PyTorch DataLoader workers.
#include "loaderlens/proc_text.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/worker_rule.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <map>
#include <set>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// A small tree for the rule: PID -> facts.
struct Tree {
    std::map<pid_t, ProcessFacts> processes;
    WorkerRule::Lookup lookup() const {
        return [this](pid_t pid) -> std::optional<ProcessFacts> {
            auto found = processes.find(pid);
            if (found == processes.end()) return std::nullopt;
            return found->second;
        };
    }
    ProcessFacts& add(pid_t pid, pid_t ppid, std::string comm, std::string cmdline,
                      AddressLayout layout) {
        return processes[pid] = {pid, ppid, std::move(comm), std::move(cmdline), layout};
    }
    Role role(pid_t pid, const std::optional<std::string>& match = std::nullopt) const {
        return WorkerRule(100, match).role_of(processes.at(pid), lookup());
    }
};

const AddressLayout python_layout{0x7ffd1000, 0x2000000, 0x7ffd2000, 0x7ffd2100};
const AddressLayout other_layout{0x7ffe5000, 0x3000000, 0x7ffe6000, 0x7ffe6100};
const AddressLayout third_layout{0x7ff01000, 0x4000000, 0x7ff02000, 0x7ff02100};
const AddressLayout unreadable{};

const std::string python = "/usr/bin/python3"; // Debian's, with Debian's numpy and torch

bool python_has(const std::string& module) {
    return run({python, "-c", "import " + module}).exit_code == 0;
}

// Records `command` and returns the processes of the recording.
std::vector<ProcessInfo> record_processes(const TempDir& dir,
                                          const std::vector<std::string>& command) {
    const std::string output = dir.file("roles.db");
    std::filesystem::remove(output);
    std::vector<std::string> argv{cli_path(),  "record", "-q",   "--interval",
                                  "fast=50ms", "-o",     output, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    RunResult result = run(argv, std::chrono::seconds(120));
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    return Recording(output).processes();
}

std::vector<ProcessInfo> with_role(const std::vector<ProcessInfo>& processes, Role role) {
    std::vector<ProcessInfo> out;
    for (const auto& p : processes)
        if (p.role == role) out.push_back(p);
    return out;
}

// slot -> generations seen in it.
std::map<int, std::set<int>> slots_of(const std::vector<ProcessInfo>& workers) {
    std::map<int, std::set<int>> slots;
    for (const auto& w : workers)
        slots[w.slot].insert(w.generation);
    return slots;
}

const std::string pytorch_script =
    std::string(LOADERLENS_FIXTURES_DIR) + "/../pytorch/dataloader_with_helper.py";

// A .npy of `rows` rows of 4 KiB (1024 float32) for the PyTorch script.
std::string make_rows(const TempDir& dir, int rows) {
    const std::string data = dir.file("rows.npy");
    BOOST_REQUIRE(run({cli_path(), "mkdata", "npy", "--count", std::to_string(rows), "--shape",
                       "1024", "--dtype", "f4", data})
                      .exit_code == 0);
    return data;
}

std::map<int, std::set<int>> expected_slots(int workers, int generations) {
    std::map<int, std::set<int>> slots;
    for (int slot = 0; slot < workers; ++slot)
        for (int generation = 0; generation < generations; ++generation)
            slots[slot].insert(generation);
    return slots;
}

} // namespace

BOOST_AUTO_TEST_SUITE(worker_roles)

BOOST_AUTO_TEST_CASE(rule_forked_children_of_main_are_workers_exec_children_helpers) {
    Tree tree;
    tree.add(100, 1, "python3", "python3 train.py", python_layout);
    tree.add(101, 100, "python3", "python3 -c sampler", other_layout); // subprocess helper
    tree.add(102, 100, "python3", "python3 train.py", python_layout);  // fork, DataLoader worker
    tree.add(103, 100, "pt_data_worker", "python3 train.py", python_layout);
    tree.add(104, 101, "python3", "python3 -c sampler", other_layout); // the helper's own fork
    tree.add(105, 102, "python3", "python3 train.py", python_layout);  // a worker's fork
    BOOST_TEST(tree.role(100) == Role::main);
    BOOST_TEST(tree.role(101) == Role::helper);
    BOOST_TEST(tree.role(102) == Role::worker);
    BOOST_TEST(tree.role(103) == Role::worker);
    BOOST_TEST(tree.role(104) == Role::helper); // forked, but from a helper
    BOOST_TEST(tree.role(105) == Role::helper); // forked, but from a worker
}

BOOST_AUTO_TEST_CASE(rule_spawn_and_forkserver) {
    Tree tree;
    tree.add(100, 1, "python3", "python3 train.py", python_layout);
    tree.add(101, 100, "python3",
             "python3 -B -c from multiprocessing.resource_tracker import main;main(3)",
             other_layout);
    tree.add(102, 100, "python3",
             "python3 -B -c from multiprocessing.spawn import spawn_main; "
             "spawn_main(tracker_fd=4, pipe_handle=6) --multiprocessing-fork",
             third_layout);
    tree.add(103, 100, "python3",
             "python3 -B -c from multiprocessing.forkserver import main; main(5, 6)", other_layout);
    tree.add(104, 103, "python3",
             "python3 -B -c from multiprocessing.forkserver import main; main(5, 6)",
             other_layout); // forked by the forkserver: a forkserver worker
    BOOST_TEST(tree.role(101) == Role::helper);
    BOOST_TEST(tree.role(102) == Role::worker);
    BOOST_TEST(tree.role(103) == Role::helper);
    BOOST_TEST(tree.role(104) == Role::worker);
}

BOOST_AUTO_TEST_CASE(rule_main_is_a_shell) {
    Tree tree;
    tree.add(100, 1, "bash", "bash train.sh", other_layout);
    tree.add(101, 100, "bash", "bash train.sh", other_layout); // a subshell: fork of a shell
    tree.add(102, 100, "python3", "python3 train.py", python_layout);
    tree.add(103, 102, "python3", "python3 train.py", python_layout); // python's fork: a worker
    tree.add(104, 100, "tee", "tee log", third_layout);
    BOOST_TEST(tree.role(101) == Role::helper);
    BOOST_TEST(tree.role(102) == Role::helper); // the loader, not a worker of bash
    BOOST_TEST(tree.role(103) == Role::worker);
    BOOST_TEST(tree.role(104) == Role::helper);
}

BOOST_AUTO_TEST_CASE(rule_worker_match_overrides_and_unreadable_layouts) {
    Tree tree;
    tree.add(100, 1, "python3", "python3 train.py", unreadable);
    tree.add(101, 100, "python3", "python3 train.py", unreadable); // same program and argv
    tree.add(102, 100, "python3", "python3 -c sampler", unreadable);
    BOOST_TEST(tree.role(101) == Role::worker);
    BOOST_TEST(tree.role(102) == Role::helper);
    BOOST_TEST(tree.role(102, "sampler") == Role::worker);
    BOOST_TEST(tree.role(101, "sampler") == Role::helper);
    BOOST_TEST(tree.role(100, "python") == Role::main);
}

// Real processes: a helper started with subprocess before three forked children. The kernel's
// layouts are what the rule reads (fork keeps them, exec makes new ones).
BOOST_AUTO_TEST_CASE(real_fork_and_subprocess, *LOADERLENS_MAY_SKIP) {
    if (!precondition(std::filesystem::exists(python), python + " is missing", InCi::must_have))
        return;
    TempDir dir;
    auto processes = record_processes(dir, {python, "-c",
                                            "import os, subprocess, time\n"
                                            "helper = subprocess.Popen(['sleep', '2'])\n"
                                            "kids = []\n"
                                            "for _ in range(3):\n"
                                            "    pid = os.fork()\n"
                                            "    if pid == 0:\n"
                                            "        time.sleep(1.0)\n"
                                            "        os._exit(0)\n"
                                            "    kids.append(pid)\n"
                                            "for pid in kids: os.waitpid(pid, 0)\n"
                                            "helper.wait()\n"});
    auto workers = with_role(processes, Role::worker);
    auto helpers = with_role(processes, Role::helper);
    BOOST_TEST(workers.size() == 3u);
    BOOST_TEST((slots_of(workers) == expected_slots(3, 1)));
    BOOST_REQUIRE(helpers.size() == 1u);
    BOOST_TEST(helpers[0].cmdline == "sleep 2");
}

// Real PyTorch DataLoader workers (Debian's python3-torch 1.13) with a subprocess helper started
// before the loader: the report had the helper in slot 0 and the workers in slots 1-5.
BOOST_AUTO_TEST_CASE(real_pytorch_dataloader_fork, *LOADERLENS_MAY_SKIP) {
    if (!precondition(python_has("torch"), "python3-torch is not installed (" + python + ")",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string data = make_rows(dir, 640);
    // Five workers re-forked for each of two epochs: slots 0-4, generations 0 and 1.
    auto processes = record_processes(dir, {python, pytorch_script, data, "5", "2", "fork", "0"});
    auto workers = with_role(processes, Role::worker);
    BOOST_TEST(workers.size() == 10u);
    BOOST_TEST((slots_of(workers) == expected_slots(5, 2)));
    auto helpers = with_role(processes, Role::helper);
    BOOST_REQUIRE(helpers.size() == 1u);
    BOOST_TEST(helpers[0].cmdline.find("while True") != std::string::npos);
    for (const auto& w : workers) // forked from main: main's command line
        BOOST_TEST(w.cmdline.find("dataloader_with_helper.py") != std::string::npos);
}

// spawn and forkserver start methods: exec'd workers running multiprocessing's code.
BOOST_AUTO_TEST_CASE(real_pytorch_dataloader_spawn_and_forkserver, *LOADERLENS_MAY_SKIP) {
    if (!precondition(python_has("torch"), "python3-torch is not installed (" + python + ")",
                      InCi::must_have))
        return;
    TempDir dir;
    const std::string data = make_rows(dir, 320);
    for (const char* method : {"spawn", "forkserver"}) {
        BOOST_TEST_CONTEXT(method) {
            auto processes =
                record_processes(dir, {python, pytorch_script, data, "2", "1", method, "1"});
            auto workers = with_role(processes, Role::worker);
            BOOST_TEST(workers.size() == 2u);
            BOOST_TEST((slots_of(workers) == expected_slots(2, 1)));
            for (const auto& h : with_role(processes, Role::helper)) // tracker, forkserver, sampler
                BOOST_TEST((h.cmdline.find("while True") != std::string::npos ||
                            h.cmdline.find("multiprocessing") != std::string::npos),
                           h.cmdline);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
