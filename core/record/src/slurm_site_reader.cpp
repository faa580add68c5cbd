// SPDX-License-Identifier: MIT
#include "loaderlens/slurm_site_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace loaderlens {

namespace {

using Clock = std::chrono::steady_clock;

// Ends the reader's answer: rows before it were all written.
constexpr const char* answer_end = "end\n";

int milliseconds_until(Clock::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
}

bool all_digits(const std::string& s) {
    return !s.empty() && s.size() <= 10 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string describe(const BoundedRun& run, const std::string& what) {
    switch (run.outcome) {
    case BoundedRun::Outcome::exited:
        return what + " exited " + std::to_string(run.code);
    case BoundedRun::Outcome::killed_by_signal:
        return what + " was killed by signal " + std::to_string(run.code);
    case BoundedRun::Outcome::timed_out:
        return what + " timed out after " + std::to_string(scontrol_time_limit.count()) + " s";
    case BoundedRun::Outcome::too_much_output:
        return what + " wrote more than 1 MiB";
    case BoundedRun::Outcome::not_started:
        return what + " could not start: " + std::strerror(run.code);
    }
    return what;
}

void write_all(int fd, const std::string& bytes) {
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

} // namespace

BoundedRun run_bounded(const std::string& executable, const std::vector<std::string>& args,
                       std::chrono::milliseconds limit, std::size_t max_output) {
    BoundedRun run;
    // Everything the child needs is made before fork(): after it, only exec.
    std::vector<std::string> words{executable};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<std::string> environment;
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, "LC_ALL=", 7) != 0) environment.emplace_back(*e);
    environment.emplace_back("LC_ALL=C"); // scontrol's words and numbers as parsed here
    std::vector<char*> argv, envp;
    for (auto& w : words)
        argv.push_back(w.data());
    argv.push_back(nullptr);
    for (auto& e : environment)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
        run.code = errno;
        return run;
    }
    const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    const Clock::time_point deadline = Clock::now() + limit;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig = 1; sig < NSIG; ++sig)
            if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
        if (null_fd >= 0) {
            ::dup2(null_fd, STDIN_FILENO);
            ::dup2(null_fd, STDERR_FILENO);
        }
        ::dup2(out[1], STDOUT_FILENO);
        ::execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    const int fork_errno = errno;
    ::close(out[1]);
    if (null_fd >= 0) ::close(null_fd);
    if (pid < 0) {
        ::close(out[0]);
        run.code = fork_errno;
        return run;
    }
    ::setpgid(pid, pid); // as the child does: whichever runs first, the group exists
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    bool exited = false, eof = false, too_much = false;
    int status = 0;
    while (!(exited && eof) && !too_much) {
        const int wait_ms = milliseconds_until(deadline);
        if (wait_ms == 0) break;
        pollfd fds[2] = {{out[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
        if (eof) fds[0].fd = -1;
        if (exited || pidfd < 0) fds[1].fd = -1;
        // Without a pidfd (Linux before 5.3) the exit is looked for every 20 ms.
        const int n = ::poll(fds, 2, pidfd < 0 ? std::min(wait_ms, 20) : wait_ms);
        if (n < 0 && errno != EINTR) break;
        if (!eof && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buffer[16384];
            const ssize_t got = ::read(out[0], buffer, sizeof buffer);
            if (got > 0) {
                run.output.append(buffer, static_cast<std::size_t>(got));
                too_much = run.output.size() > max_output;
            } else if (got == 0 || errno != EINTR) {
                eof = true;
            }
        }
        // Seen, not reaped: until it is reaped its PID (the group's id) cannot be reused, so the
        // kill below reaches its group and nothing else.
        siginfo_t info{};
        if (!exited &&
            ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid)
            exited = true;
    }
    ::close(out[0]);
    // Whatever of its group is left (the program, or a child of it holding the pipe) goes now.
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pidfd >= 0) ::close(pidfd);
    if (too_much) {
        run.outcome = BoundedRun::Outcome::too_much_output;
        run.output.clear();
    } else if (!exited) {
        run.outcome = BoundedRun::Outcome::timed_out;
    } else if (WIFEXITED(status)) {
        run.outcome = BoundedRun::Outcome::exited;
        run.code = WEXITSTATUS(status);
    } else {
        run.outcome = BoundedRun::Outcome::killed_by_signal;
        run.code = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    return run;
}

std::optional<std::string> find_executable(const std::string& name,
                                           const std::string& search_path) {
    for (std::size_t start = 0; start <= search_path.size();) {
        std::size_t end = search_path.find(':', start);
        if (end == std::string::npos) end = search_path.size();
        const std::string directory = search_path.substr(start, end - start);
        const std::string candidate = (directory.empty() ? "." : directory) + "/" + name;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return std::nullopt;
}

std::optional<std::string> read_config_file(const std::string& path, std::string& problem) {
    constexpr int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    int fd = ::open(path.c_str(), flags | O_NOFOLLOW);
    if (fd < 0 && errno == ELOOP) {
        struct stat link {};
        if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode) &&
            (link.st_uid == 0 || link.st_uid == ::geteuid())) {
            fd = ::open(path.c_str(), flags);
        } else {
            problem = "a symbolic link owned by uid " + std::to_string(link.st_uid) +
                      " (neither root nor you): not followed";
            return std::nullopt;
        }
    }
    if (fd < 0) {
        problem = std::strerror(errno);
        return std::nullopt;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        problem = "not a regular file";
        return std::nullopt;
    }
    std::string text;
    char buffer[16384];
    ssize_t got;
    while ((got = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() <= scontrol_max_output)
        text.append(buffer, static_cast<std::size_t>(got));
    const int read_errno = errno;
    ::close(fd);
    if (got < 0)
        problem = std::strerror(read_errno);
    else if (text.size() > scontrol_max_output)
        problem = "larger than 1 MiB";
    else
        return text;
    return std::nullopt;
}

SlurmEnvironment SlurmEnvironment::from_process() {
    auto get = [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        if (!value || !*value) return std::nullopt;
        return std::string(value);
    };
    SlurmEnvironment e;
    e.job_id = get("SLURM_JOB_ID").value_or("");
    e.step_id = get("SLURM_STEP_ID").value_or("");
    e.slurm_conf = get("SLURM_CONF");
    e.search_path = get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
    return e;
}

SlurmSiteReading read_slurm_site(const SlurmEnvironment& env) {
    SlurmSiteReading reading;
    const auto scontrol = find_executable("scontrol", env.search_path);
    std::string why_not_scontrol = "scontrol not found in PATH";
    bool controller_silent = false;
    if (scontrol) {
        const BoundedRun run =
            run_bounded(*scontrol, {"show", "config"}, scontrol_time_limit, scontrol_max_output);
        controller_silent = run.outcome == BoundedRun::Outcome::timed_out;
        if (run.outcome == BoundedRun::Outcome::exited && run.code == 0) {
            reading.site = parse_scontrol_config(run.output);
            reading.site_source = "scontrol show config";
            why_not_scontrol = "scontrol show config: not the output expected";
        } else {
            why_not_scontrol = describe(run, "scontrol show config");
        }
    }
    if (!reading.site) {
        const std::string path = env.slurm_conf.value_or("/etc/slurm/slurm.conf");
        std::string problem;
        if (auto text = read_config_file(path, problem)) {
            SlurmConf conf = parse_slurm_conf(*text);
            reading.site = conf.site;
            reading.site_source = "SLURM_CONF " + path;
            if (!conf.includes.empty()) reading.site_source += " (its Include lines not read)";
        } else {
            reading.site_unavailable = why_not_scontrol + "; SLURM_CONF " + path + ": " + problem;
        }
    }

    const std::string step = env.job_id + "." + env.step_id;
    if (env.step_id.empty())
        reading.step_unavailable = "no SLURM_STEP_ID (a batch script or an allocation's shell: "
                                   "the job's limit applies)";
    else if (!all_digits(env.job_id) || !all_digits(env.step_id))
        reading.step_unavailable = "SLURM_JOB_ID or SLURM_STEP_ID is not a number";
    else if (std::stoull(env.step_id) >= 4294967200ULL)
        reading.step_unavailable = "step " + env.step_id +
                                   " is SLURM's batch, extern or "
                                   "interactive step: the job's limit applies";
    else if (!scontrol)
        reading.step_unavailable = "scontrol not found in PATH";
    else if (controller_silent)
        reading.step_unavailable = "not asked: scontrol show config timed out";
    else {
        const std::string what = "scontrol show step " + step;
        const BoundedRun run = run_bounded(*scontrol, {"show", "step", step}, scontrol_time_limit,
                                           scontrol_max_output);
        if (run.outcome != BoundedRun::Outcome::exited || run.code != 0) {
            reading.step_unavailable = describe(run, what);
        } else {
            const SlurmStepLimit limit = parse_scontrol_step(run.output, step);
            reading.step_mem_kb = limit.mem_kb_per_node;
            if (limit.mem_kb_per_node)
                reading.step_source = what;
            else
                reading.step_unavailable = what + ": " + limit.problem;
        }
    }
    return reading;
}

std::unique_ptr<SlurmSiteReader> SlurmSiteReader::start_in_job() {
    const SlurmEnvironment env = SlurmEnvironment::from_process();
    if (env.job_id.empty()) return nullptr;
    int answer[2];
    if (::pipe2(answer, O_CLOEXEC) != 0) return nullptr;
    const pid_t middle = ::fork();
    if (middle == 0) {
        // The middle process exits at once: the reader is orphaned, no descendant of ours.
        if (::fork() == 0) {
            // Nothing of the recorder's kept open: not the job's standard output and error (an
            // orphan holding them would keep srun's I/O open), not the recording's files.
            constexpr int answer_fd = 3;
            ::dup2(answer[1], answer_fd);
            ::fcntl(answer_fd, F_SETFD, FD_CLOEXEC);
            ::close_range(answer_fd + 1, ~0U, 0);
            if (const int null_fd = ::open("/dev/null", O_RDWR); null_fd >= 0) {
                for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
                    ::dup2(null_fd, fd);
                if (null_fd > answer_fd) ::close(null_fd);
            }
            std::string message;
            for (const auto& [key, value] : slurm_site_meta(read_slurm_site(env)))
                message += key + "=" + value + "\n";
            write_all(answer_fd, message + answer_end);
        }
        _exit(0);
    }
    ::close(answer[1]);
    if (middle < 0) {
        ::close(answer[0]);
        return nullptr;
    }
    while (::waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::fcntl(answer[0], F_SETFL, O_NONBLOCK);
    return std::unique_ptr<SlurmSiteReader>(new SlurmSiteReader(answer[0]));
}

SlurmSiteReader::~SlurmSiteReader() {
    if (fd_ >= 0) ::close(fd_);
}

bool SlurmSiteReader::read_available() {
    char buffer[4096];
    // Whole once its last line is in, even while something still holds the pipe.
    while (!ended_ && !received_.ends_with(answer_end)) {
        const ssize_t got = ::read(fd_, buffer, sizeof buffer);
        if (got > 0 && received_.size() < (1 << 16))
            received_.append(buffer, static_cast<std::size_t>(got));
        else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
            ended_ = true;
        else if (got < 0 && errno == EAGAIN)
            break;
    }
    return ended_ || received_.ends_with(answer_end);
}

SlurmSiteReader::Rows SlurmSiteReader::rows_or(const std::string& reason) {
    taken_ = true;
    Rows rows;
    if (received_.ends_with(answer_end)) {
        for (std::size_t start = 0; start < received_.size();) {
            const std::size_t end = received_.find('\n', start);
            const std::string line = received_.substr(start, end - start);
            if (const std::size_t equals = line.find('='); equals != std::string::npos)
                rows.emplace_back(line.substr(0, equals), line.substr(equals + 1));
            start = end + 1;
        }
        return rows;
    }
    rows.emplace_back("slurm_site_unavailable", reason);
    rows.emplace_back("slurm_step_unavailable", reason);
    return rows;
}

std::optional<SlurmSiteReader::Rows> SlurmSiteReader::poll() {
    if (taken_ || !read_available()) return std::nullopt;
    return rows_or("the reading process ended without an answer");
}

SlurmSiteReader::Rows SlurmSiteReader::wait() {
    // The reader's own bound: two scontrol runs and a file, with a second to spare.
    const Clock::time_point deadline = started_ + 2 * scontrol_time_limit + std::chrono::seconds(1);
    while (!read_available()) {
        const int wait_ms = milliseconds_until(deadline);
        if (wait_ms == 0) break;
        pollfd pfd{fd_, POLLIN, 0};
        ::poll(&pfd, 1, wait_ms);
    }
    return rows_or(ended_ ? "the reading process ended without an answer"
                          : "no answer from the reading process in time");
}

SlurmSiteReader::Rows SlurmSiteReader::now(const std::string& reason) {
    read_available();
    return rows_or(reason);
}

} // namespace loaderlens
