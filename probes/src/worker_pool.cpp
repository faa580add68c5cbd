// SPDX-License-Identifier: MIT
#include "worker_pool.hpp"

#include "loaderlens/probes/loader.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {
std::string describe_wait_status(int status) {
    if (WIFSIGNALED(status))
        return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    return "exited with status " + std::to_string(WEXITSTATUS(status));
}
} // namespace

WorkerPool::WorkerPool(int workers, int max_in_flight, const WorkerContext& shared)
    : count_(workers), max_in_flight_(max_in_flight), shared_(shared) {}

WorkerPool::~WorkerPool() {
    stop();
}

std::vector<pid_t> WorkerPool::start() {
    int result_pipe[2];
    if (pipe2(result_pipe, O_CLOEXEC) != 0)
        throw LoaderError(std::string("cannot create a pipe: ") + std::strerror(errno));
    // Every result in flight must fit in the pipe: a worker then never blocks on a result while
    // main blocks on sending it a task, so the two can never wait on each other.
    const int needed = max_in_flight_ * static_cast<int>(sizeof(TaskResult));
    int capacity = fcntl(result_pipe[0], F_GETPIPE_SZ);
    if (capacity < needed) capacity = fcntl(result_pipe[0], F_SETPIPE_SZ, needed);
    if (capacity < needed) {
        const int error = errno;
        ::close(result_pipe[0]);
        ::close(result_pipe[1]);
        throw LoaderError("cannot make a pipe hold " + std::to_string(max_in_flight_) +
                          " results (" + std::strerror(error) +
                          "; see /proc/sys/fs/pipe-max-size and pipe-user-pages-soft): lower "
                          "--prefetch or --workers");
    }
    result_fd_ = result_pipe[0];
    std::vector<pid_t> pids;
    const pid_t main_pid = getpid();
    for (int w = 0; w < count_; ++w) {
        int task_pipe[2];
        if (pipe2(task_pipe, O_CLOEXEC) != 0)
            throw LoaderError(std::string("cannot create a pipe: ") + std::strerror(errno));
        pid_t pid = fork();
        if (pid < 0) {
            const int error = errno;
            ::close(task_pipe[0]);
            ::close(task_pipe[1]);
            ::close(result_pipe[1]);
            throw LoaderError(std::string("cannot fork a worker: ") + std::strerror(error));
        }
        if (pid == 0) {
            // A worker outlives nothing: if main dies, so does it (PyTorch's workers poll for it).
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != main_pid) _exit(1);
            ::close(task_pipe[1]);
            ::close(result_pipe[0]);
            for (const Process& sibling : workers_) // else a sibling never sees its EOF
                ::close(sibling.task_fd);
            run_child(w, task_pipe[0], result_pipe[1]);
        }
        ::close(task_pipe[0]);
        workers_.push_back({pid, task_pipe[1]});
        pids.push_back(pid);
    }
    ::close(result_pipe[1]);
    return pids;
}

void WorkerPool::run_child(int worker, int task_read_fd, int result_write_fd) {
    prctl(PR_SET_NAME, "ll_data_worker");
    WorkerContext context = shared_;
    context.worker = worker;
    context.task_fd = task_read_fd;
    context.result_fd = result_write_fd;
    int code = 1;
    try {
        code = worker_main(context);
    } catch (...) {
    }
    _exit(code); // never return into the parent's code (or a test framework's)
}

void WorkerPool::send(int worker, const TaskHeader& header, const std::vector<Sample>& samples) {
    const Process& process = workers_.at(static_cast<std::size_t>(worker));
    if (!write_all(process.task_fd, &header, sizeof header) ||
        !write_all(process.task_fd, samples.data(), samples.size() * sizeof(Sample))) {
        throw_reported_failure(); // the worker said why before it exited
        check_alive();
        throw LoaderError("worker " + std::to_string(worker) + " (pid " +
                          std::to_string(process.pid) + ") stopped taking tasks");
    }
}

void WorkerPool::new_epoch() {
    for (int w = 0; w < count_; ++w)
        send(w, TaskHeader{-1, -1, 0}, {});
    // As PyTorch's persistent workers answer _ResumeIteration, each says when its epoch-start
    // work is done; the previous epoch's results were all taken, so nothing else is in the pipe.
    for (int ready = 0; ready < count_;)
        if (receive().batch_number == -1) ++ready;
}

void WorkerPool::check_alive() {
    for (Process& process : workers_) {
        int status = 0;
        if (process.pid > 0 && waitpid(process.pid, &status, WNOHANG) == process.pid) {
            const pid_t pid = process.pid;
            process.pid = -1;
            const auto worker = &process - workers_.data();
            throw LoaderError("worker " + std::to_string(worker) + " (pid " + std::to_string(pid) +
                              ") " + describe_wait_status(status));
        }
    }
}

void WorkerPool::throw_reported_failure() {
    pollfd pfd{result_fd_, POLLIN, 0};
    while (poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN)) {
        TaskResult result{};
        if (!read_all(result_fd_, &result, sizeof result)) return;
        if (result.failed) throw_failure(result);
    }
}

void WorkerPool::throw_failure(TaskResult& result) const {
    result.message[sizeof result.message - 1] = '\0';
    const std::string worker = "worker " + std::to_string(result.worker);
    if (result.failed == static_cast<std::int32_t>(Failure::dataset_damaged))
        throw DatasetError(shared_.dataset + ": " + result.message + " (found by " + worker + ")");
    throw LoaderError(worker + ": " + result.message);
}

TaskResult WorkerPool::receive() {
    for (;;) {
        pollfd pfd{result_fd_, POLLIN, 0};
        int ready = poll(&pfd, 1, 1000);
        if (ready < 0 && errno != EINTR)
            throw LoaderError(std::string("poll: ") + std::strerror(errno));
        if (ready <= 0) {
            check_alive();
            continue;
        }
        TaskResult result{};
        if (!read_all(result_fd_, &result, sizeof result)) {
            check_alive();
            throw LoaderError("all workers exited before the epoch ended");
        }
        if (result.failed) throw_failure(result);
        return result;
    }
}

void WorkerPool::stop() {
    for (Process& process : workers_)
        if (process.task_fd >= 0) ::close(process.task_fd);
    for (Process& process : workers_) {
        if (process.pid <= 0) continue;
        int status = 0;
        while (waitpid(process.pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    workers_.clear();
    if (result_fd_ >= 0) ::close(result_fd_);
    result_fd_ = -1;
}

} // namespace loaderlens::probes
