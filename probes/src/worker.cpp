// SPDX-License-Identifier: MIT
#include "worker.hpp"

#include "loaderlens/probes/dataset.hpp"
#include "sample_reader.hpp"
#include "shared_buffers.hpp"

#include <algorithm>
#include <cerrno>
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

int worker_main(const WorkerContext& context) {
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
