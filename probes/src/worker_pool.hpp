// SPDX-License-Identifier: MIT
// The main process's side of the workers: forking them, sending tasks, taking results, and
// noticing a worker that died.
#pragma once

#include "worker.hpp"

#include <sys/types.h>
#include <vector>

namespace loaderlens::probes {

class WorkerPool {
  public:
    // `shared`: everything the workers inherit (buffers, reader, heap); worker/fds are set per
    // worker.
    WorkerPool(int workers, int max_in_flight, const WorkerContext& shared);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Forks the workers; returns their PIDs in worker order.
    std::vector<pid_t> start();
    void send(int worker, const TaskHeader& header, const std::vector<Sample>& samples);
    // Tells every worker a new epoch begins and waits until each has done its epoch-start work.
    void new_epoch();
    // The next result from any worker. Throws LoaderError when a worker failed or died,
    // DatasetError when it found the dataset damaged.
    TaskResult receive();
    // Closes the task pipes and waits for the workers to exit.
    void stop();
    bool running() const { return !workers_.empty(); }

  private:
    struct Process {
        pid_t pid = -1;
        int task_fd = -1;
    };
    [[noreturn]] void run_child(int worker, int task_read_fd, int result_write_fd);
    void check_alive();
    // Throws the failure a worker reported, if one is waiting in the result pipe.
    void throw_reported_failure();
    // DatasetError for a damaged dataset, else LoaderError naming the worker.
    [[noreturn]] void throw_failure(TaskResult& result) const;

    int count_;
    int max_in_flight_;
    WorkerContext shared_;
    std::vector<Process> workers_;
    int result_fd_ = -1;
};

} // namespace loaderlens::probes
