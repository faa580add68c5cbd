// SPDX-License-Identifier: MIT
#include "worker.hpp"

#include "loaderlens/probes/dataset.hpp"
#include "sample_reader.hpp"
#include "shared_buffers.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace loaderlens::probes {

bool write_all(int fd, const void* data, std::size_t bytes) {
    const auto* p = static_cast<const char*>(data);
    while (bytes > 0) {
        ssize_t n = ::write(fd, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
    return true;
}

bool read_all(int fd, void* data, std::size_t bytes) {
    auto* p = static_cast<char*>(data);
    while (bytes > 0) {
        ssize_t n = ::read(fd, p, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
    return true;
}

namespace {
void send_failure(const WorkerContext& context, std::int64_t batch, Failure failure,
                  const std::string& why) {
    TaskResult result{};
    result.batch_number = batch;
    result.worker = context.worker;
    result.failed = static_cast<std::int32_t>(failure);
    std::string text = why;
    if (text.size() >= sizeof result.message) // cut, and say so
        text = text.substr(0, sizeof result.message - 4) + "...";
    std::strncpy(result.message, text.c_str(), sizeof result.message - 1);
    write_all(context.result_fd, &result, sizeof result);
}
} // namespace

namespace {
// --leak-per-epoch: memory taken and written at an epoch's start, never given back (a cache
// that only grows). Filled so that every page is resident and private.
void sleep_for_us(std::int64_t us) {
    if (us <= 0) return;
    timespec ts{us / 1'000'000, (us % 1'000'000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
}

void leak(const WorkerContext& context) {
    if (context.leak_bytes_per_epoch <= 0 || context.worker != context.leak_worker) return;
    const auto bytes = static_cast<std::size_t>(context.leak_bytes_per_epoch);
    void* block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) throw std::runtime_error("--leak-per-epoch: cannot allocate");
    std::memset(block, 0x5a, bytes);
}
} // namespace

namespace {
// Prepared before each read: a signal handler may only write() them.
struct CrashReport {
    volatile std::sig_atomic_t armed = 0;
    int result_fd = -1; // a worker's result pipe; -1: main, the line goes to stderr
    int worker = 0;
    TaskResult result[2]{}; // SIGSEGV, SIGBUS
    std::string line[2];
    bool installed = false;
    struct sigaction previous_segv {
    }, previous_bus{};
};
CrashReport crash;
alignas(16) char crash_stack[64 * 1024]; // a stack overflow leaves no stack to handle it on

void on_read_crash(int signal) {
    if (!crash.armed) { // not a read: the fault repeats under the previous disposition
        sigaction(SIGSEGV, &crash.previous_segv, nullptr);
        sigaction(SIGBUS, &crash.previous_bus, nullptr);
        return;
    }
    const int which = signal == SIGSEGV ? 0 : 1;
    if (crash.result_fd >= 0)
        (void)!::write(crash.result_fd, &crash.result[which], sizeof(TaskResult));
    else
        (void)!::write(2, crash.line[which].data(), crash.line[which].size());
    _exit(2);
}
} // namespace

ReadCrashGuard::ReadCrashGuard(const std::string& dataset, const std::string& what) {
    if (!crash.installed) {
        stack_t alternate{};
        alternate.ss_sp = crash_stack;
        alternate.ss_size = sizeof crash_stack;
        sigaltstack(&alternate, nullptr);
        struct sigaction action {};
        action.sa_handler = on_read_crash;
        action.sa_flags = SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        sigaction(SIGSEGV, &action, &crash.previous_segv);
        sigaction(SIGBUS, &action, &crash.previous_bus);
        crash.installed = true;
    }
    const char* names[2] = {"SIGSEGV", "SIGBUS"};
    for (int i = 0; i < 2; ++i) {
        const std::string reason =
            what + ": libhdf5 crashed reading it (" + names[i] + "): damage the checks missed";
        crash.line[i] = "loaderlens: " + dataset + ": " + reason + "\n";
        crash.result[i] = TaskResult{};
        crash.result[i].batch_number = -1;
        crash.result[i].failed = static_cast<std::int32_t>(Failure::dataset_damaged);
        crash.result[i].worker = crash.worker;
        std::strncpy(crash.result[i].message, reason.c_str(), sizeof crash.result[i].message - 1);
    }
    crash.armed = 1;
}

ReadCrashGuard::~ReadCrashGuard() {
    crash.armed = 0;
}

void report_read_crashes_to(int result_fd, int worker) {
    crash.result_fd = result_fd;
    crash.worker = worker;
}

int worker_main(const WorkerContext& context) {
    report_read_crashes_to(context.result_fd, context.worker);
    std::vector<Sample> samples;
    TaskHeader task{};
    try {
        leak(context); // the first epoch starts with the worker
    } catch (const std::exception& e) {
        send_failure(context, -1, Failure::run, e.what());
        return 1;
    }
    while (read_all(context.task_fd, &task, sizeof task)) {
        samples.resize(static_cast<std::size_t>(std::max(task.samples, 0)));
        if (!read_all(context.task_fd, samples.data(), samples.size() * sizeof(Sample))) break;
        try {
            if (task.batch_number < 0) { // a new epoch: its start work, then say it is done
                if (context.reopen_each_epoch) context.reader->reopen();
                leak(context);
                TaskResult ready{};
                ready.batch_number = -1;
                ready.worker = context.worker;
                if (!write_all(context.result_fd, &ready, sizeof ready)) return 1;
                continue;
            }
            std::byte* out =
                context.batch_buffers + static_cast<std::size_t>(task.slot) * context.batch_bytes;
            TaskResult result{};
            result.batch_number = task.batch_number;
            result.worker = context.worker;
            for (const Sample& sample : samples) {
                const std::int64_t bytes = context.reader->read(sample, out);
                out += bytes;
                result.bytes_read += bytes;
                sleep_for_us(context.transform_us * sample.count); // per record
                if (context.heap)
                    for (std::int64_t i = 0; i < sample.count; ++i)
                        context.heap->visit(sample.index + i);
            }
            if (!write_all(context.result_fd, &result, sizeof result)) return 1;
        } catch (const DatasetDamage& e) { // main names the dataset: only the reason is sent
            send_failure(context, task.batch_number, Failure::dataset_damaged, e.reason);
            return 1;
        } catch (const std::exception& e) {
            send_failure(context, task.batch_number, Failure::run, e.what());
            return 1;
        }
    }
    return 0;
}

} // namespace loaderlens::probes
