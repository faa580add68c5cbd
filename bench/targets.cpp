// SPDX-License-Identifier: MIT
#include "targets.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace loaderlens::bench {

namespace {

// What the signal handler must undo. Fixed arrays and sig_atomic_t counts: a handler may only
// read plain memory and call async-signal-safe functions (kill, unlink, rmdir).
struct Registry {
    static constexpr int max_paths = 32, max_pids = 64;
    char dir[PATH_MAX] = {};
    char paths[max_paths][PATH_MAX] = {};
    volatile std::sig_atomic_t path_count = 0;
    volatile pid_t pids[max_pids] = {};
};
Registry registry;

void add_path(const std::string& path) {
    if (registry.path_count >= Registry::max_paths || path.size() >= PATH_MAX) return;
    std::memcpy(registry.paths[registry.path_count], path.c_str(), path.size() + 1);
    registry.path_count = registry.path_count + 1; // after the copy: the handler sees whole paths
}

void on_fatal_signal(int sig) {
    for (volatile pid_t& pid : registry.pids) {
        if (pid <= 0) continue;
        kill(-pid, SIGKILL); // the group of a target tree (fails harmlessly for a non-leader)
        kill(pid, SIGKILL);
    }
    for (int i = 0; i < registry.path_count; ++i)
        unlink(registry.paths[i]);
    if (registry.dir[0]) rmdir(registry.dir);
    signal(sig, SIG_DFL);
    raise(sig);
}

[[noreturn]] void child_fail(int ready_fd) {
    const char e = 'E';
    [[maybe_unused]] auto n = write(ready_fd, &e, 1);
    _exit(1);
}

// Runs in a forked child: dies with its parent (a SIGKILLed bench must not leave targets behind).
void die_with_parent(pid_t expected_parent, int ready_fd) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != expected_parent) child_fail(ready_fd);
}

// Maps `file` read-only and shared, as a loader maps a dataset, and reads one byte of every page
// so that the whole file is in this process's page tables (RSS = file size).
void* map_and_touch(const char* file, int ready_fd, std::size_t* mapped = nullptr) {
    if (!*file) return nullptr;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) child_fail(ready_fd);
    struct stat st {};
    if (fstat(fd, &st) != 0) child_fail(ready_fd);
    const auto size = static_cast<std::size_t>(st.st_size);
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) child_fail(ready_fd);
    close(fd);
    const auto* bytes = static_cast<const volatile unsigned char*>(map);
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    unsigned sum = 0;
    for (std::size_t off = 0; off < size; off += page)
        sum += bytes[off];
    [[maybe_unused]] volatile unsigned keep = sum;
    if (mapped) *mapped = size;
    return map;
}

// Motion::moving (targets.hpp): reports ready, then moves until killed.
[[noreturn]] void report_ready_and_move(void* map, std::size_t size, int ready_fd) {
    const char r = 'R';
    if (write(ready_fd, &r, 1) != 1) _exit(1);
    close(ready_fd);
    constexpr std::size_t anon_cap = 64 * mib, anon_step = 256 * 1024;
    auto* anon = static_cast<unsigned char*>(
        mmap(nullptr, anon_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (anon == MAP_FAILED) _exit(1);
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    auto* bytes = static_cast<unsigned char*>(map);
    std::uint64_t state = 0x2545f4914f6cdd1dULL ^ static_cast<std::uint64_t>(getpid());
    const auto random_mib = [&] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        const std::size_t pieces = std::max<std::size_t>(1, size / mib);
        return (state % pieces) * mib;
    };
    std::size_t written = 0;
    unsigned sum = 0;
    for (;;) {
        if (size >= mib) {
            madvise(bytes + random_mib(), mib, MADV_DONTNEED);
            const std::size_t from = random_mib();
            for (std::size_t off = 0; off < mib; off += page)
                sum += static_cast<const volatile unsigned char*>(bytes)[from + off];
        }
        if (written + anon_step <= anon_cap) {
            std::memset(anon + written, 1, anon_step);
            written += anon_step;
        }
        [[maybe_unused]] volatile unsigned keep = sum;
        usleep(100 * 1000);
    }
}

[[noreturn]] void report_ready_and_wait(int ready_fd) {
    const char r = 'R';
    if (write(ready_fd, &r, 1) != 1) _exit(1);
    close(ready_fd);
    for (;;)
        pause(); // idle: the benchmarks measure the steady case
}

std::string read_small(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Fields after the comm's closing ')': index 0 is field 3 (state).
std::vector<std::string> stat_fields(pid_t pid) {
    const std::string text = read_small("/proc/" + std::to_string(pid) + "/stat");
    const auto close = text.rfind(')');
    if (close == std::string::npos) throw SetupError("process " + std::to_string(pid) + " is gone");
    std::istringstream rest(text.substr(close + 1));
    std::vector<std::string> fields;
    for (std::string f; rest >> f;)
        fields.push_back(f);
    if (fields.size() < 20) throw SetupError("unexpected /proc/" + std::to_string(pid) + "/stat");
    return fields;
}

} // namespace

void init_cleanup() {
    // Fleet workers are grandchildren: when their parent is killed they are re-parented to us
    // and reaped by TargetTree, instead of lingering as zombies under a PID 1 that may not reap.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    sigemptyset(&action.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
        sigaction(sig, &action, nullptr);
}

void guard_process(pid_t pid) {
    for (volatile pid_t& slot : registry.pids)
        if (slot <= 0) {
            slot = pid;
            return;
        }
}

void unguard_process(pid_t pid) {
    for (volatile pid_t& slot : registry.pids)
        if (slot == pid) slot = 0;
}

Scratch::Scratch() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/var/tmp") + "/loaderlens-bench-XXXXXX";
    if (!mkdtemp(pattern.data()))
        throw SetupError("cannot create a directory like " + pattern + ": " + std::strerror(errno));
    dir_ = pattern;
    if (dir_.size() < PATH_MAX) std::memcpy(registry.dir, dir_.c_str(), dir_.size() + 1);
}

Scratch::~Scratch() {
    for (const auto& f : files_)
        unlink(f.c_str());
    rmdir(dir_.c_str());
    registry.path_count = 0;
    registry.dir[0] = 0;
}

std::string Scratch::path_for(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    // SQLite's companions (the recorder's WAL) live next to the database.
    for (const char* suffix : {"", "-wal", "-shm"}) {
        files_.push_back(path + suffix);
        add_path(path + suffix);
    }
    return path;
}

std::string Scratch::make_file(const std::string& name, std::size_t bytes) {
    const std::string path = dir_ + "/" + name;
    files_.push_back(path);
    add_path(path);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw SetupError("cannot create " + path + ": " + std::strerror(errno));
    std::vector<std::uint64_t> chunk(mib / sizeof(std::uint64_t));
    std::uint64_t state = 0x9e3779b97f4a7c15ULL ^ bytes;
    for (std::size_t written = 0; written < bytes;) {
        for (auto& word : chunk) { // xorshift64: cheap, and no two pages alike
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word = state;
        }
        const std::size_t n = std::min(bytes - written, mib);
        const auto* data = reinterpret_cast<const char*>(chunk.data());
        for (std::size_t done = 0; done < n;) {
            ssize_t w = write(fd, data + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                close(fd);
                throw SetupError("cannot write " + path + ": " + std::strerror(errno));
            }
            done += static_cast<std::size_t>(w);
        }
        written += n;
    }
    fdatasync(fd);
    close(fd);
    return path;
}

TargetTree::TargetTree(const std::string& file, int workers, Motion motion,
                       std::chrono::seconds timeout)
    : workers_(workers) {
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
        throw SetupError(std::string("pipe: ") + std::strerror(errno));
    const pid_t bench = getpid();
    const char* file_c = file.c_str();
    leader_ = fork();
    if (leader_ < 0) throw SetupError(std::string("fork: ") + std::strerror(errno));
    if (leader_ == 0) {
        close(ready[0]);
        setpgid(0, 0);
        die_with_parent(bench, ready[1]);
        // A name of its own, inherited by the workers: tools that select processes by name
        // (smem -P) then find exactly this tree and not the bench that forked it.
        char name[16];
        std::snprintf(name, sizeof name, "lltree-%d", static_cast<int>(getpid()));
        prctl(PR_SET_NAME, name);
        if (workers == 0) map_and_touch(file_c, ready[1]);
        const pid_t self = getpid();
        for (int i = 0; i < workers; ++i) {
            pid_t worker = fork();
            if (worker < 0) child_fail(ready[1]);
            if (worker == 0) {
                die_with_parent(self, ready[1]);
                std::size_t size = 0;
                void* map = map_and_touch(file_c, ready[1], &size);
                if (motion == Motion::moving && map) report_ready_and_move(map, size, ready[1]);
                report_ready_and_wait(ready[1]);
            }
        }
        report_ready_and_wait(ready[1]);
    }
    setpgid(leader_, leader_); // also here: no window in which a kill(-leader) would miss
    guard_process(leader_);
    close(ready[1]);

    // One byte per process: 'R' ready, 'E' failed. EOF before all bytes means a child died.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int pending = workers + 1;
    std::string failure;
    while (pending > 0 && failure.empty()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd pfd{ready[0], POLLIN, 0};
        if (left.count() <= 0 || poll(&pfd, 1, static_cast<int>(left.count())) == 0) {
            failure = "timed out waiting for the target processes to map " + file;
            break;
        }
        char c = 0;
        ssize_t n = read(ready[0], &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1 || c != 'R')
            failure = "a target process could not map " + file;
        else
            --pending;
    }
    close(ready[0]);
    if (!failure.empty()) {
        stop();
        throw SetupError(failure);
    }
}

std::string TargetTree::comm() const {
    return "lltree-" + std::to_string(leader_);
}

TargetTree::~TargetTree() {
    stop();
}

void TargetTree::stop() {
    if (leader_ <= 0) return;
    const std::vector<pid_t> workers = children_of(leader_);
    kill(-leader_, SIGKILL);
    waitpid(leader_, nullptr, 0);
    // The leader's exit re-parented its workers to us (subreaper): reap them, not anything else.
    for (pid_t w : workers)
        waitpid(w, nullptr, 0);
    unguard_process(leader_);
    leader_ = -1;
}

ProcStat read_proc_stat(pid_t pid) {
    const auto f = stat_fields(pid);
    // Field N is f[N - 3]: utime 14, stime 15, starttime 22.
    return {std::stoull(f[19]), std::stoull(f[11]), std::stoull(f[12])};
}

std::int64_t resident_kib(pid_t pid) {
    std::istringstream statm(read_small("/proc/" + std::to_string(pid) + "/statm"));
    std::int64_t size = 0, resident = -1;
    statm >> size >> resident;
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        const pid_t candidate = std::stoi(name);
        try {
            if (std::stoi(stat_fields(candidate)[1]) == pid) out.push_back(candidate);
        } catch (const std::exception&) {
            // exited while we listed /proc
        }
    }
    return out;
}

} // namespace loaderlens::bench
