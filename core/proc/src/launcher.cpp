// SPDX-License-Identifier: MIT
#include "loaderlens/launcher.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace loaderlens {

namespace {
rlimit original_nofile{};
bool nofile_raised = false;

// The signals the child gets back as loaderlens found them; the recorder blocks or handles each.
constexpr int reset_signals[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
                                 SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE};
bool inherited_ignored[NSIG] = {};
} // namespace

void remember_inherited_signal_dispositions() {
    for (int sig : reset_signals) {
        struct sigaction current {};
        if (sigaction(sig, nullptr, &current) == 0)
            inherited_ignored[sig] = current.sa_handler == SIG_IGN;
    }
}

void raise_open_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    original_nofile = limit;
    limit.rlim_cur = limit.rlim_max;
    nofile_raised = setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

Launched launch(const std::vector<std::string>& argv,
                const std::vector<std::pair<std::string, std::string>>& extra_env,
                const LaunchOptions& options) {
    Launched result;
    if (argv.empty()) {
        result.exec_errno = ENOENT;
        return result;
    }
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        result.exec_errno = errno;
        return result;
    }
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        result.exec_errno = errno;
        close(report[0]);
        close(report[1]);
        return result;
    }
    if (pid == 0) {
        if (options.die_with_parent) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            // The parent may have died between fork() and prctl(): then nobody would kill us.
            if (getppid() != parent) _exit(128 + SIGKILL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : reset_signals)
            signal(sig, inherited_ignored[sig] ? SIG_IGN : SIG_DFL);
        if (nofile_raised) setrlimit(RLIMIT_NOFILE, &original_nofile);
        for (const auto& [name, value] : extra_env)
            setenv(name.c_str(), value.c_str(), 1);
        for (int fd : options.inherited_fds)
            fcntl(fd, F_SETFD, 0);
        execvp(args[0], args.data());
        int error = errno;
        ssize_t ignored = write(report[1], &error, sizeof error);
        (void)ignored;
        _exit(exit_code_for_exec_errno(error));
    }
    close(report[1]);
    int error = 0;
    ssize_t n;
    do
        n = read(report[0], &error, sizeof error);
    while (n < 0 && errno == EINTR);
    close(report[0]);
    result.pid = pid;
    if (n == sizeof error) { // exec failed: the child has exited; reap it
        result.exec_errno = error;
        int status = 0;
        waitpid(pid, &status, 0);
    }
    return result;
}

int exit_code_for_exec_errno(int error) {
    return error == ENOENT || error == ENOTDIR ? 127 : 126;
}

int exit_code_for_wait_status(int status) {
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 1;
}

} // namespace loaderlens
