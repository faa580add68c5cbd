// SPDX-License-Identifier: MIT
#include "buffer_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <sys/statvfs.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

std::string mib_text(std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return text;
}

void check_shm_room(std::size_t bytes) {
    // tmpfs accepts any ftruncate; a worker writing past the free space dies of SIGBUS (PyTorch's
    // infamous "bus error"). Say it before forking.
    struct statvfs fs {};
    if (statvfs("/dev/shm", &fs) != 0) return;
    const auto free_bytes =
        static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize);
    if (static_cast<std::int64_t>(bytes) > free_bytes)
        throw LoaderError("the batch buffers need " + mib_text(static_cast<std::int64_t>(bytes)) +
                          " of /dev/shm and only " + mib_text(free_bytes) +
                          " are free: lower --batch, --prefetch or --workers");
}

std::int64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
}

} // namespace

BufferPlan plan_buffers(const LoaderOptions& o, const DatasetLayout& layout) {
    const PatternOptions& p = o.pattern;
    // A batch never holds more samples than an epoch draws.
    const std::int64_t samples_per_epoch_bound = std::max<std::int64_t>(
        {layout.record_count, p.num_samples, static_cast<std::int64_t>(p.trace.size())});
    const std::int64_t samples = std::min(p.batch, samples_per_epoch_bound);
    const std::int64_t records_per_sample = p.pattern == Pattern::windows ? p.window : 1;
    BufferPlan plan;
    plan.in_flight = o.prefetch * std::max(p.workers, 1);
    std::int64_t slot = 0, ring = 0;
    if (__builtin_mul_overflow(samples, records_per_sample, &slot) ||
        __builtin_mul_overflow(slot, layout.record_bytes, &slot) ||
        __builtin_mul_overflow(slot, static_cast<std::int64_t>(plan.in_flight), &ring))
        throw LoaderError("--batch " + std::to_string(p.batch) +
                          ": the batch buffers would exceed 2^63 bytes");
    plan.slot_bytes = static_cast<std::size_t>(slot);
    plan.ring_bytes = static_cast<std::size_t>(ring);
    if (p.workers > 0) check_shm_room(plan.ring_bytes);
    return plan;
}

void check_memory(const LoaderOptions& o, const DatasetLayout& layout, const BufferPlan& plan) {
    const std::int64_t memory = physical_memory_bytes();
    if (memory == 0) return;
    // `what` would take `bytes`, more than `share` of the memory.
    const auto refuse_over = [&](double bytes, double share, const std::string& what) {
        if (bytes <= share * static_cast<double>(memory)) return;
        throw LoaderError(what + " would take " +
                          mib_text(static_cast<std::int64_t>(std::min(bytes, 0x1p62))) +
                          ", more than " + (share < 1 ? "a quarter of " : "") + "this machine's " +
                          mib_text(memory) + " of memory");
    };
    refuse_over(static_cast<double>(o.cow_heap_mib) * (1 << 20), 1,
                "--cow-heap " + std::to_string(o.cow_heap_mib));
    refuse_over(static_cast<double>(o.prefork_anon_mib) * (1 << 20), 1,
                "--prefork-anon " + std::to_string(o.prefork_anon_mib));
    // A leak grows every epoch; what it reaches by the last epoch must fit.
    refuse_over(static_cast<double>(o.leak_mib_per_epoch) * (1 << 20) * std::max(o.epochs, 1), 1,
                "--leak-per-epoch " + std::to_string(o.leak_mib_per_epoch) + " over " +
                    std::to_string(o.epochs) + " epochs");
    // ReadProgress notes every record read: one bit per record, for main and each worker.
    const int trackers = std::max(o.pattern.workers, 0) + 1;
    refuse_over(static_cast<double>(layout.record_count / 64 + 1) * 8 * trackers, 0.25,
                layout.path + ": noting which of its " + std::to_string(layout.record_count) +
                    " records each of " + std::to_string(trackers) +
                    " processes read (a larger --record-size makes fewer records)");
    if (o.pattern.workers == 0)
        refuse_over(static_cast<double>(plan.slot_bytes), 1,
                    "--batch " + std::to_string(o.pattern.batch) + ": the batch buffer");
    if (o.pin) refuse_over(static_cast<double>(plan.ring_bytes), 1, "--pin: the staging buffers");
}

} // namespace loaderlens::probes
