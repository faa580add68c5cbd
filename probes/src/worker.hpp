// SPDX-License-Identifier: MIT
// The worker side of the loader, and the messages between main and workers.
// Tasks go main -> worker on one pipe per worker; results come back on one pipe shared by all
// workers: a result is smaller than PIPE_BUF, so each write() lands whole.
#pragma once

#include "loaderlens/probes/patterns.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace loaderlens::probes {

class SampleReader;
class CowHeap;

struct TaskHeader {
    std::int64_t batch_number; // -1: a new epoch begins (persistent workers reopen if asked)
    std::int32_t slot;         // batch buffer to fill
    std::int32_t samples;      // followed by this many Sample records
};

// Why a worker stopped: main turns a damaged dataset into a DatasetError (bad input, exit 2),
// anything else into a failed run (exit 1).
enum class Failure : std::int32_t { none = 0, run = 1, dataset_damaged = 2 };

struct TaskResult {
    std::int64_t batch_number;
    std::int64_t bytes_read;
    std::int32_t worker;
    std::int32_t failed; // a Failure: message says why, and the worker exits
    char message[104];
};
static_assert(sizeof(TaskResult) == 128);

struct WorkerContext {
    int worker = 0;
    int task_fd = -1, result_fd = -1;
    std::byte* batch_buffers = nullptr;
    std::size_t batch_bytes = 0;
    SampleReader* reader = nullptr;
    CowHeap* heap = nullptr;
    std::int64_t leak_bytes_per_epoch = 0; // --leak-per-epoch, in worker leak_worker only
    int leak_worker = 0;
    bool reopen_each_epoch = false;
    std::int64_t transform_us = 0; // --transform-time, per sample
    std::string dataset;           // names the dataset in a damaged-dataset error
};

// A crash (SIGSEGV, SIGBUS) inside libhdf5 while it reads records of a file that passed the
// checks before reading (hdf5_safety.hpp): this process then ends with exit 2 and one line naming
// the file and the records, as for a damaged dataset (in a worker, the line goes to main as a
// Failure::dataset_damaged result). Any other crash is left to the previous disposition. Armed
// around each H5Dread only; `dataset` and `what` (e.g. "record 7 of /data") are copied.
class ReadCrashGuard {
  public:
    ReadCrashGuard(const std::string& dataset, const std::string& what);
    ~ReadCrashGuard();
    ReadCrashGuard(const ReadCrashGuard&) = delete;
    ReadCrashGuard& operator=(const ReadCrashGuard&) = delete;
};
// In a worker: a crash while reading is reported on `result_fd` as worker `worker`'s failure.
void report_read_crashes_to(int result_fd, int worker);

// Runs until the task pipe is closed; returns the process exit code.
int worker_main(const WorkerContext& context);

// Whole-buffer pipe I/O; false on EOF or error.
bool write_all(int fd, const void* data, std::size_t bytes);
bool read_all(int fd, void* data, std::size_t bytes);

} // namespace loaderlens::probes
