// SPDX-License-Identifier: MIT
#include "fuzz_spawn.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <sys/resource.h>
#include <unistd.h>

namespace loaderlens::test {

namespace {

// The limits every command runs under (soft limits: this process gets its own back). RLIMIT_FSIZE:
// a file over 256 MiB is a write error (EFBIG, with SIGXFSZ ignored), as a full disk would be, so
// that a huge --size never fills the test machine's disk. RLIMIT_AS: huge sizes end in a clean
// error, not in the machine's memory (an ASan build reserves terabytes of shadow: there
// ASAN_OPTIONS bound memory instead). No core files.
// posix_spawn has no attribute for limits: the child inherits this process's, so they are set
// around the spawn and restored when the object goes.
class LimitsForChild {
  public:
    LimitsForChild() {
        lower(RLIMIT_CORE, 0, core_);
        lower(RLIMIT_FSIZE, 256 << 20, file_size_);
        if (!fuzz_sanitized) lower(RLIMIT_AS, 3ull << 30, address_space_);
    }
    ~LimitsForChild() {
        setrlimit(RLIMIT_CORE, &core_);
        setrlimit(RLIMIT_FSIZE, &file_size_);
        if (!fuzz_sanitized) setrlimit(RLIMIT_AS, &address_space_);
    }
    LimitsForChild(const LimitsForChild&) = delete;
    LimitsForChild& operator=(const LimitsForChild&) = delete;

  private:
    static void lower(int resource, rlim_t soft, rlimit& saved) {
        getrlimit(resource, &saved);
        const rlimit lowered{std::min(soft, saved.rlim_max), saved.rlim_max};
        setrlimit(resource, &lowered);
    }
    rlimit core_{}, file_size_{}, address_space_{};
};

std::vector<char*> pointers(const std::vector<std::string>& words) {
    std::vector<char*> out;
    for (const auto& word : words)
        out.push_back(const_cast<char*>(word.c_str()));
    out.push_back(nullptr);
    return out;
}

// A forked child (for a command run as user nobody): the same conditions, then exec.
[[noreturn]] void exec_forked(const FuzzCommand& command, const std::string& workdir,
                              const std::string& out, const std::string& err,
                              const std::vector<char*>& argv, const std::vector<char*>& envp) {
    setpgid(0, 0);
    for (int signal = 1; signal < NSIG; ++signal)
        std::signal(signal, signal == SIGXFSZ ? SIG_IGN : SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    if (chdir(workdir.c_str()) != 0) _exit(126);
    if (command.as_nobody && geteuid() == 0) {
        if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(126);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
}

} // namespace

pid_t spawn_command(const FuzzCommand& command, const std::string& workdir, const std::string& out,
                    const std::string& err, const std::vector<std::string>& environment) {
    const auto argv = pointers(command.argv), envp = pointers(environment);
    // SIGXFSZ stays ignored in this process: an ignored signal is inherited through exec.
    std::signal(SIGXFSZ, SIG_IGN);
    const LimitsForChild limits;
    if (command.as_nobody) {
        const pid_t pid = fork();
        if (pid == 0) exec_forked(command, workdir, out, err, argv, envp);
        if (pid > 0) setpgid(pid, pid);
        return pid;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    // A pipe nobody reads: its read end is closed before the child starts (closed after the
    // spawn, a child that wrote first filled the pipe's buffer and exited 0: seen once in CI).
    int ends[2] = {-1, -1};
    if (command.stdout_closed && pipe2(ends, O_CLOEXEC) == 0) {
        close(ends[0]);
        ends[0] = -1;
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);
    }
    posix_spawn_file_actions_addchdir_np(&actions, workdir.c_str());
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // A shell's defaults (this process may ignore SIGPIPE, which exec would keep), but SIGXFSZ.
    sigset_t defaults, none;
    sigfillset(&defaults);
    sigdelset(&defaults, SIGXFSZ);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                              POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    const int error = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (ends[1] >= 0) close(ends[1]);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return pid;
}

} // namespace loaderlens::test
