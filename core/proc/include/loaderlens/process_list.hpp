// SPDX-License-Identifier: MIT
// The machine's processes, for choosing what to attach to (`loaderlens ps`, `record --pid`'s
// errors): read through libproc2 in one pass over /proc (two with a CPU interval), then marked
// where they look like a data loader's main and workers. A one-off listing, never a sampler:
// libproc2 measured 1.7x slower than our own reads on the per-process hot paths (docs/ps.md).
#pragma once

#include "loaderlens/types.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens {

// What a listed process looks like to a data-loader user.
enum class LoaderRole { none, main, worker };
// Why a process was taken for a loader's main (and its children for its workers).
enum class LoaderRule {
    none,
    // At least one child named pt_data_worker (PyTorch >= 2.x names its DataLoader workers so).
    pt_data_worker_children,
    // A python process with children forked from it without exec: python too, same arguments
    // (PyTorch 1.13's DataLoader workers, multiprocessing's fork start method).
    forked_python_children,
};
const char* to_string(LoaderRole role);
const char* to_string(LoaderRule rule);

struct ListedProcess {
    pid_t pid = 0, ppid = 0;
    uid_t uid = 0;    // effective user ID (status: Uid, 2nd), as ps and top show it
    std::string user; // that user's name, or the number when the password database has none
    std::string comm; // stat: comm (the kernel keeps 15 bytes)
    std::vector<std::string> argv; // cmdline; empty for a zombie or a process that cleared it
    char state = '?';              // stat: state (R, S, D, Z, T...)
    Kib res;                       // statm: resident x page size; none for a zombie
    // Share of one CPU: utime + stime over the listing's interval, or over the process's life
    // when the interval is 0 (ProcessListOptions::cpu_interval). Over 100 for several threads.
    std::optional<double> cpu_percent;
    std::uint64_t start_ticks = 0; // stat: starttime, clock ticks after boot
    std::int64_t start_time = 0;   // the same as a Unix time (seconds)
    LoaderRole role = LoaderRole::none;
    LoaderRule rule = LoaderRule::none; // of the main (its workers carry it too)
    std::vector<pid_t> workers;         // a main's workers, in PID order
    pid_t main = 0;                     // a worker's main
};

struct ProcessListOptions {
    // CPU use is measured between two readings this far apart, as top does; 0 gives the average
    // since each process started, as ps does.
    std::chrono::milliseconds cpu_interval{250};
};

// /proc cannot be listed (not mounted, libproc2 refused).
class ProcessListError : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Every process on the machine but kernel threads, in PID order, marked by mark_loaders().
std::vector<ListedProcess> list_processes(const ProcessListOptions& options = {});

// Marks loader mains and their workers in a list that holds every process (so that children are
// found by their ppid). Pure, so that the rules can be tested on made-up lists too.
void mark_loaders(std::vector<ListedProcess>& processes);

// Whether a process runs python: its comm, or the name of its argv[0] (a script with a #!
// line has the interpreter there, and newer PyTorch renames the main thread pt_main_thread).
bool runs_python(const ListedProcess& process);

// The owner of one process, read directly from /proc/PID/status (one file, not a listing).
struct ProcessOwner {
    uid_t real = 0, effective = 0, saved = 0;
};
std::optional<ProcessOwner> read_process_owner(pid_t pid);

// The user's name from the password database, or the number as text.
std::string user_name(uid_t uid);

} // namespace loaderlens
