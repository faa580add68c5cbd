// SPDX-License-Identifier: MIT
#include "loaderlens/process_list.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <libproc2/pids.h>
#include <map>
#include <pwd.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

namespace loaderlens {

const char* to_string(LoaderRole role) {
    switch (role) {
    case LoaderRole::main:
        return "main";
    case LoaderRole::worker:
        return "worker";
    case LoaderRole::none:
        break;
    }
    return "none";
}

const char* to_string(LoaderRule rule) {
    switch (rule) {
    case LoaderRule::pt_data_worker_children:
        return "pt_data_worker children";
    case LoaderRule::forked_python_children:
        return "forked python children";
    case LoaderRule::none:
        break;
    }
    return "none";
}

namespace {

// PF_KTHREAD in stat's flags (include/linux/sched.h): kernel threads have no memory to record.
constexpr unsigned long kernel_thread_flag = 0x00200000;

// One libproc2 context, released when done. Cheap items only (stat, status, statm, cmdline):
// never an SMAP item, which would read smaps_rollup of every process on the machine.
class PidsReader {
  public:
    template <std::size_t N> explicit PidsReader(std::array<pids_item, N>& items) {
        if (const int error = procps_pids_new(&info_, items.data(), static_cast<int>(N)); error < 0)
            throw ProcessListError(std::string("cannot list processes (libproc2): ") +
                                   std::strerror(-error));
    }
    ~PidsReader() { procps_pids_unref(&info_); }
    PidsReader(const PidsReader&) = delete;
    PidsReader& operator=(const PidsReader&) = delete;

    // Every task of the machine. The results belong to the context and live until its next call.
    const pids_fetch& reap() {
        pids_fetch* fetch = procps_pids_reap(info_, PIDS_FETCH_TASKS_ONLY);
        if (!fetch)
            throw ProcessListError(std::string("cannot list processes (libproc2): ") +
                                   std::strerror(errno ? errno : EIO));
        return *fetch;
    }

  private:
    pids_info* info_ = nullptr;
};

double clock_seconds(clockid_t clock) {
    timespec now{};
    clock_gettime(clock, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct CpuTicks {
    std::uint64_t start_ticks = 0, ticks = 0;
};

// utime + stime of every process now, by PID (the first of the two readings).
std::unordered_map<pid_t, CpuTicks> read_cpu_ticks() {
    std::array<pids_item, 3> items{PIDS_ID_PID, PIDS_TICS_BEGAN, PIDS_TICS_ALL};
    PidsReader reader(items);
    const pids_fetch& fetch = reader.reap();
    std::unordered_map<pid_t, CpuTicks> out;
    for (int i = 0; i < fetch.counts->total; ++i) {
        const pids_result* row = fetch.stacks[i]->head;
        out[row[0].result.s_int] = {row[1].result.ull_int, row[2].result.ull_int};
    }
    return out;
}

// The columns of the full reading, in the order of `items` below.
enum Column { pid, ppid, euid, comm, argv, state, res, virt, flags, began, ticks, columns };

} // namespace

std::string user_name(uid_t uid) {
    long size = sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buffer(static_cast<std::size_t>(size > 0 ? size : 16384));
    passwd entry{};
    passwd* found = nullptr;
    if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
        found->pw_name && *found->pw_name)
        return found->pw_name;
    return std::to_string(uid);
}

std::optional<ProcessOwner> read_process_owner(pid_t pid) {
    const auto status = read_text_file("/proc/" + std::to_string(pid) + "/status");
    if (!status) return std::nullopt;
    const std::size_t line = status->find("\nUid:");
    if (line == std::string::npos) return std::nullopt;
    unsigned long real = 0, effective = 0, saved = 0;
    if (std::sscanf(status->c_str() + line + 5, "%lu %lu %lu", &real, &effective, &saved) != 3)
        return std::nullopt;
    return ProcessOwner{static_cast<uid_t>(real), static_cast<uid_t>(effective),
                        static_cast<uid_t>(saved)};
}

bool runs_python(const ListedProcess& process) {
    if (process.comm.starts_with("python")) return true;
    if (process.argv.empty()) return false;
    const std::string& first = process.argv.front();
    const std::size_t slash = first.rfind('/');
    return first.compare(slash == std::string::npos ? 0 : slash + 1, 6, "python") == 0;
}

void mark_loaders(std::vector<ListedProcess>& processes) {
    std::unordered_map<pid_t, std::vector<std::size_t>> children;
    for (std::size_t i = 0; i < processes.size(); ++i)
        children[processes[i].ppid].push_back(i);
    for (ListedProcess& parent : processes) {
        const auto found = children.find(parent.pid);
        if (parent.pid == 0 || found == children.end()) continue;
        std::vector<std::size_t> named, forked;
        for (std::size_t child : found->second) {
            const ListedProcess& kid = processes[child];
            if (kid.comm == "pt_data_worker") named.push_back(child);
            // Forked without exec: the child still runs the parent's program and arguments. A
            // child that exec'd (multiprocessing's spawn, a resource tracker) has its own.
            if (!kid.argv.empty() && kid.argv == parent.argv && runs_python(kid))
                forked.push_back(child);
        }
        const bool by_name = !named.empty();
        if (!by_name && (forked.empty() || !runs_python(parent))) continue;
        parent.role = LoaderRole::main;
        parent.rule =
            by_name ? LoaderRule::pt_data_worker_children : LoaderRule::forked_python_children;
        for (std::size_t child : by_name ? named : forked) {
            ListedProcess& worker = processes[child];
            parent.workers.push_back(worker.pid);
            worker.main = parent.pid;
            if (worker.role == LoaderRole::none) {
                worker.role = LoaderRole::worker;
                worker.rule = parent.rule;
            }
        }
        std::sort(parent.workers.begin(), parent.workers.end());
    }
}

std::vector<ListedProcess> list_processes(const ProcessListOptions& options) {
    const long hertz = sysconf(_SC_CLK_TCK);
    std::unordered_map<pid_t, CpuTicks> first;
    double first_at = 0;
    if (options.cpu_interval.count() > 0) {
        first = read_cpu_ticks();
        first_at = clock_seconds(CLOCK_BOOTTIME);
        std::this_thread::sleep_for(options.cpu_interval);
    }

    std::array<pids_item, columns> items{};
    items[pid] = PIDS_ID_PID;
    items[ppid] = PIDS_ID_PPID;
    items[euid] = PIDS_ID_EUID;
    items[comm] = PIDS_CMD;
    items[argv] = PIDS_CMDLINE_V;
    items[state] = PIDS_STATE;
    items[res] = PIDS_MEM_RES;
    items[virt] = PIDS_MEM_VIRT;
    items[flags] = PIDS_FLAGS;
    items[began] = PIDS_TICS_BEGAN;
    items[ticks] = PIDS_TICS_ALL;
    PidsReader reader(items);
    const pids_fetch& fetch = reader.reap();
    // The boot's Unix time, from the two clocks read together (stat's starttime counts from boot
    // in CLOCK_BOOTTIME, suspended time included).
    const double now = clock_seconds(CLOCK_BOOTTIME);
    const double boot_time = clock_seconds(CLOCK_REALTIME) - now;

    std::map<uid_t, std::string> names;
    std::vector<ListedProcess> out;
    out.reserve(static_cast<std::size_t>(fetch.counts->total));
    for (int i = 0; i < fetch.counts->total; ++i) {
        const pids_result* row = fetch.stacks[i]->head;
        if (row[flags].result.ul_int & kernel_thread_flag) continue;
        ListedProcess p;
        p.pid = row[pid].result.s_int;
        p.ppid = row[ppid].result.s_int;
        p.uid = row[euid].result.u_int;
        auto [name, added] = names.try_emplace(p.uid);
        if (added) name->second = user_name(p.uid);
        p.user = name->second;
        p.comm = row[comm].result.str ? row[comm].result.str : "";
        // libproc2 gives {"-"} for an empty cmdline (a zombie's, say).
        if (char** words = row[argv].result.strv)
            for (; *words; ++words)
                p.argv.emplace_back(*words);
        if (p.argv.size() == 1 && p.argv.front() == "-") p.argv.clear();
        p.state = static_cast<char>(row[state].result.s_ch);
        // statm of a zombie (or of a process gone mid-read) is all zeros: no address space, so
        // no resident size either, rather than a resident size of 0.
        if (p.state != 'Z' && row[virt].result.ul_int > 0)
            p.res = static_cast<std::int64_t>(row[res].result.ul_int);
        p.start_ticks = row[began].result.ull_int;
        const double started = static_cast<double>(p.start_ticks) / static_cast<double>(hertz);
        p.start_time = static_cast<std::int64_t>(boot_time + started);
        // CPU seconds over wall seconds: since the first reading, or since the process started
        // if it was not there yet (or had another start: a reused PID), or over its whole life.
        std::uint64_t used = row[ticks].result.ull_int;
        double span = now - started;
        if (const auto earlier = first.find(p.pid);
            earlier != first.end() && earlier->second.start_ticks == p.start_ticks) {
            used -= std::min(used, earlier->second.ticks);
            span = now - first_at;
        }
        if (span > 0)
            p.cpu_percent = 100.0 * static_cast<double>(used) / static_cast<double>(hertz) / span;
        out.push_back(std::move(p));
    }
    std::sort(out.begin(), out.end(),
              [](const ListedProcess& a, const ListedProcess& b) { return a.pid < b.pid; });
    mark_loaders(out);
    return out;
}

} // namespace loaderlens
