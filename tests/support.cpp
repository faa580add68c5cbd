// SPDX-License-Identifier: MIT
#include "support.hpp"

#include "made_recordings.hpp"

#include <boost/test/unit_test.hpp>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace loaderlens::test {

namespace fs = std::filesystem;
using namespace std::chrono;

namespace {
// In a forked child: replace it with argv, or exit 127 as a shell would.
[[noreturn]] void exec_or_exit(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
}
} // namespace

TempDir::TempDir() {
    // $TMPDIR, else /var/tmp, not /tmp: /tmp may be a tmpfs, whose pages are shmem, and the tests
    // measure page-cache file pages.
    const char* tmpdir = std::getenv("TMPDIR");
    const fs::path base = tmpdir && *tmpdir ? fs::path(tmpdir) : fs::path("/var/tmp");
    std::string pattern = (base / "loaderlens-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}
TempDir::~TempDir() {
    check_recordings_made_under(path_.string());
    std::error_code ignored;
    fs::remove_all(path_, ignored);
}

void make_file(const std::string& path, std::size_t bytes) {
    std::ofstream out(path, std::ios::binary);
    std::mt19937_64 random(42);
    std::vector<std::uint64_t> block(8192);
    for (std::size_t written = 0; written < bytes;) {
        for (auto& word : block)
            word = random() | 1;
        std::size_t n = std::min(bytes - written, block.size() * sizeof(std::uint64_t));
        out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(n));
        written += n;
    }
}

Child::Child(const std::vector<std::string>& argv, bool own_process_group)
    : own_process_group_(own_process_group), recording_(recording_written_by(argv)) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
        if (own_process_group) setpgid(0, 0);
        dup2(pipe_fds[1], STDOUT_FILENO);
        exec_or_exit(argv);
    }
    close(pipe_fds[1]);
    stdout_fd_ = pipe_fds[0];
}

Child::~Child() {
    // Its process group too once it is reaped: what it started (a recorder's command, say) would
    // outlive the test, holding ctest's output pipe open until it ends. The group's ID is not
    // reused while a member lives.
    if (pid_ > 0 && own_process_group_) kill(-pid_, SIGKILL);
    if (!reaped_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
}

bool Child::wait_for_line(const std::string& prefix, milliseconds timeout) {
    const auto deadline = steady_clock::now() + timeout;
    for (;;) {
        std::size_t eol;
        while ((eol = output_.find('\n', consumed_)) != std::string::npos) {
            std::string line = output_.substr(consumed_, eol - consumed_);
            consumed_ = eol + 1;
            if (line.starts_with(prefix)) return true;
        }
        auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
        if (left <= 0) return false;
        pollfd pfd{stdout_fd_, POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(left)) <= 0) continue;
        char buffer[4096];
        ssize_t n = read(stdout_fd_, buffer, sizeof buffer);
        if (n <= 0) return false;
        output_.append(buffer, static_cast<std::size_t>(n));
    }
}

std::optional<int> Child::wait(milliseconds timeout) {
    const auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            reaped_ = true;
            if (recording_) recording_made(*recording_);
            return status;
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    return std::nullopt;
}

RunResult run(const std::vector<std::string>& argv, milliseconds timeout) {
    TempDir dir;
    const std::string out_path = dir.file("out"), err_path = dir.file("err");
    pid_t pid = fork();
    if (pid == 0) {
        int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        int null = open("/dev/null", O_RDONLY);
        dup2(null, STDIN_FILENO);
        exec_or_exit(argv);
    }
    RunResult result;
    const auto deadline = steady_clock::now() + timeout;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            result.err = "timeout";
            return result;
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    auto slurp = [](const std::string& path) {
        std::ifstream in(path);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    result.out = slurp(out_path);
    result.err = slurp(err_path);
    if (const auto recording = recording_written_by(argv)) recording_made(*recording);
    return result;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

namespace {

// `text` with each run of bytes that are not ASCII, and each \u00NN escape (a C1 control as
// the text outputs write it), as one '\x01': what is left of a name whatever became of its
// bytes that are not ASCII (kept, U+FFFD, escaped).
std::string loose(const std::string& text) {
    std::string out;
    bool in_run = false;
    for (std::size_t i = 0; i < text.size();) {
        const bool escaped_c1 = text.compare(i, 4, "\\u00") == 0 && i + 6 <= text.size() &&
                                std::isxdigit(static_cast<unsigned char>(text[i + 4])) &&
                                std::isxdigit(static_cast<unsigned char>(text[i + 5]));
        const bool other = escaped_c1 || static_cast<unsigned char>(text[i]) >= 0x80;
        if (other && !in_run) out += '\x01';
        if (!other) out += text[i];
        in_run = other;
        i += escaped_c1 ? 6 : 1;
    }
    return out;
}

} // namespace

bool mentions(const std::string& text, const std::string& name) {
    return text.find(name) != std::string::npos ||
           loose(text).find(loose(name)) != std::string::npos;
}

namespace {
// Python's sqlite3 on `db`: the script gets the connection as c and the statement as sql.
std::string through_python_sqlite(const std::string& db, const std::string& sql,
                                  const std::string& script) {
    const RunResult r = run({"/usr/bin/python3", "-c",
                             "import sqlite3, sys\n"
                             "c = sqlite3.connect(sys.argv[1])\n"
                             "sql = sys.argv[2]\n" +
                                 script,
                             db, sql});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
}
} // namespace

void sqlite_exec(const std::string& db, const std::string& sql) {
    through_python_sqlite(db, sql, "c.execute(sql); c.commit()\n");
}

std::vector<std::vector<std::string>> sqlite_rows(const std::string& db, const std::string& sql) {
    const std::string out = through_python_sqlite(db, sql,
                                                  "for row in c.execute(sql):\n"
                                                  "    print('\\t'.join(str(v) for v in row))\n");
    std::vector<std::vector<std::string>> rows;
    for (const std::string& line : lines_of(out)) {
        std::vector<std::string> fields;
        std::size_t from = 0;
        for (std::size_t tab; (tab = line.find('\t', from)) != std::string::npos; from = tab + 1)
            fields.push_back(line.substr(from, tab - from));
        fields.push_back(line.substr(from));
        rows.push_back(fields);
    }
    return rows;
}

std::string cli_path() {
    return LOADERLENS_CLI_PATH;
}
std::string workload_path() {
    return LOADERLENS_WORKLOAD_PATH;
}

std::vector<std::string> workload(const std::string& file, int workers, long anon_mib,
                                  int generations, long hold_ms) {
    return {workload_path(),
            "--file",
            file,
            "--workers",
            std::to_string(workers),
            "--anon-mib",
            std::to_string(anon_mib),
            "--generations",
            std::to_string(generations),
            "--hold-ms",
            std::to_string(hold_ms)};
}

ForkGuard::~ForkGuard() {
    kill_and_reap();
}

int ForkGuard::kill_and_reap(int signal) {
    if (reaped_ || pid_ <= 0) return -1;
    ::kill(pid_, signal);
    return reap();
}

int ForkGuard::reap() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    return status;
}

pid_t fork_paused() {
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;)
            pause();
    }
    return pid;
}

pid_t fork_paused_nobody() {
    int ready[2];
    if (pipe(ready) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char byte = 0;
    const bool became_nobody = read(ready[0], &byte, 1) == 1;
    close(ready[0]);
    if (!became_nobody) throw std::runtime_error("the child could not become nobody");
    return pid;
}

std::vector<ProcessInfo> track_until(TreeTracker& tracker, std::size_t expected,
                                     milliseconds timeout) {
    const auto deadline = steady_clock::now() + timeout;
    for (;;) {
        tracker.scan();
        auto live = tracker.live();
        if (live.size() >= expected || steady_clock::now() > deadline) return live;
        std::this_thread::sleep_for(milliseconds(20));
    }
}

} // namespace loaderlens::test
