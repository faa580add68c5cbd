// SPDX-License-Identifier: MIT
#include "loaderlens/probes/loader.hpp"

#include "buffer_plan.hpp"
#include "hdf5_file.hpp"
#include "loader_events.hpp"
#include "prefork_buffer.hpp"
#include "read_progress.hpp"
#include "sample_reader.hpp"
#include "shared_buffers.hpp"
#include "splitmix.hpp"
#include "worker_pool.hpp"

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <time.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

// More results in flight than this would not fit in one pipe (see WorkerPool::start).
constexpr int max_batches_in_flight = 4096;

void validate_loader(const LoaderOptions& o, const DatasetLayout& layout) {
    if (o.epochs < 1) throw LoaderError("--epochs " + std::to_string(o.epochs) + ": must be >= 1");
    if (o.prefetch < 1)
        throw LoaderError("--prefetch " + std::to_string(o.prefetch) + ": must be >= 1");
    if (o.prefetch > max_batches_in_flight / std::max(o.pattern.workers, 1))
        throw LoaderError("--prefetch " + std::to_string(o.prefetch) + " x --workers " +
                          std::to_string(o.pattern.workers) + ": at most " +
                          std::to_string(max_batches_in_flight) + " batches can be in flight");
    if (o.record_bytes && layout.kind != DatasetKind::raw)
        throw LoaderError("--record-size is for raw datasets; " + layout.path + " is " +
                          to_string(layout.kind) + " and knows its record size");
    const bool lmdb = layout.kind == DatasetKind::lmdb;
    if (lmdb && o.read == ReadMode::pread)
        throw LoaderError("--read pread: LMDB values are read from LMDB's own map; use "
                          "mmap-view or mmap-copy");
    if (!lmdb && !o.readahead)
        throw LoaderError("--readahead off is LMDB's MDB_NORDAHEAD; for " +
                          std::string(to_string(layout.kind)) + " files use --advice random");
    validate_hdf5_options(o, layout);
    if (o.cow_heap_mib < 0 || o.cow_heap_mib > (1 << 20))
        throw LoaderError("--cow-heap " + std::to_string(o.cow_heap_mib) +
                          ": expected MiB between 0 and 1048576");
    for (auto [mib, name] : {std::pair{o.prefork_anon_mib, "--prefork-anon"},
                             std::pair{o.leak_mib_per_epoch, "--leak-per-epoch"}})
        if (mib < 0 || mib > (1 << 20))
            throw LoaderError(std::string(name) + " " + std::to_string(mib) +
                              ": expected MiB between 0 and 1048576");
    if (o.leak_mib_per_epoch > 0 && (o.leak_worker < 0 || o.leak_worker >= o.pattern.workers))
        throw LoaderError("--leak-worker " + std::to_string(o.leak_worker) +
                          ": needs 0 <= worker < --workers " + std::to_string(o.pattern.workers));
    if (o.step_us < 0 || o.epoch_pause_ms < 0 || o.transform_us < 0)
        throw LoaderError("--step-time, --transform-time and --epoch-pause must not be negative");
    constexpr std::int64_t day_ms = 86'400'000;
    if (o.step_us > day_ms * 1000 || o.epoch_pause_ms > day_ms || o.transform_us > day_ms * 1000)
        throw LoaderError("--step-time, --transform-time and --epoch-pause: at most a day");
}

void sleep_us(std::int64_t us) {
    if (us <= 0) return;
    timespec ts{us / 1'000'000, (us % 1'000'000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
}

class Loader {
  public:
    Loader(const LoaderOptions& options, const DatasetLayout& layout, const BufferPlan& plan);
    LoaderSummary run();

  private:
    EpochStats run_epoch(int epoch, int generation, std::int64_t start_boot_ns);
    std::int64_t load_in_main(const Batch& batch);
    void run_batches_in_workers(const std::vector<Batch>& batches, EpochStats& stats);
    void consume(const std::byte* data, std::size_t bytes, std::int64_t batch_number);
    void start_workers(int epoch, int generation);
    void note_progress(const Batch& batch, int worker, const EpochStats& stats);
    std::size_t batch_bytes(const Batch& batch) const;
    nlohmann::json hdf5_config() const;

    const LoaderOptions& o_;
    const DatasetLayout& layout_;
    const int workers_;
    const int in_flight_;
    const std::size_t slot_bytes_;
    LoaderEvents events_;
    ReadProgress progress_;
    std::unique_ptr<CowHeap> heap_;
    std::unique_ptr<PreforkBuffer> prefork_;
    SampleReader reader_;
    std::unique_ptr<SharedSegment> batch_buffers_;
    // workers == 0: main collates into its own memory, 64-byte aligned like PyTorch's CPU
    // allocator (a 16-byte aligned buffer cost ~20% of copy bandwidth beyond the caches).
    struct Free {
        void operator()(std::byte* p) const { std::free(p); }
    };
    std::unique_ptr<std::byte, Free> main_batch_;
    std::unique_ptr<PinnedStaging> staging_;
    std::unique_ptr<WorkerPool> pool_;
    LoaderSummary summary_;
};

Loader::Loader(const LoaderOptions& options, const DatasetLayout& layout, const BufferPlan& plan)
    : o_(options), layout_(layout), workers_(options.pattern.workers), in_flight_(plan.in_flight),
      slot_bytes_(plan.slot_bytes), events_(options),
      progress_(layout.record_count, layout.record_bytes, workers_),
      // Built before the dataset is opened and the workers fork, as a Dataset's __init__ would.
      heap_(options.cow_heap_mib > 0
                ? std::make_unique<CowHeap>(options.cow_heap_mib, layout.record_count)
                : nullptr),
      prefork_(options.prefork_anon_mib > 0
                   ? std::make_unique<PreforkBuffer>(options.prefork_anon_mib)
                   : nullptr),
      reader_(layout, options) {
    summary_.dataset = layout;
    if (workers_ > 0) {
        batch_buffers_ = std::make_unique<SharedSegment>(plan.ring_bytes);
        summary_.batch_ring_bytes = static_cast<std::int64_t>(batch_buffers_->size());
        WorkerContext shared{.batch_buffers = batch_buffers_->data(),
                             .batch_bytes = slot_bytes_,
                             .reader = &reader_,
                             .heap = heap_.get(),
                             .leak_bytes_per_epoch = o_.leak_mib_per_epoch << 20,
                             .leak_worker = o_.leak_worker,
                             .reopen_each_epoch = o_.reopen_each_epoch,
                             .transform_us = o_.transform_us,
                             .dataset = layout_.path};
        pool_ = std::make_unique<WorkerPool>(workers_, in_flight_, shared);
    } else {
        const std::size_t bytes = (slot_bytes_ + 63) / 64 * 64;
        main_batch_.reset(static_cast<std::byte*>(std::aligned_alloc(64, bytes)));
        if (!main_batch_) throw LoaderError("cannot allocate the batch buffer");
    }
    if (o_.pin) {
        staging_ =
            std::make_unique<PinnedStaging>(static_cast<std::size_t>(in_flight_), slot_bytes_);
        summary_.pin_staging_bytes = static_cast<std::int64_t>(staging_->size());
    }
}

// What the diagnosis needs of an HDF5 run (null for other kinds): where the file was opened, the
// chunk cache each process that opens it gets, and the storage it acts on.
nlohmann::json Loader::hdf5_config() const {
    if (layout_.kind != DatasetKind::hdf5) return nullptr;
    const auto& h = layout_.hdf5;
    return {{"open", to_string(o_.hdf5_open)},
            {"dataset", h.dataset},
            {"storage", h.storage},
            {"shape", h.shape},
            {"chunks", h.chunks},
            {"chunk_bytes", h.chunk_bytes},
            {"filters", h.filters},
            {"type", h.type},
            {"chunk_cache_bytes", o_.chunk_cache_bytes.value_or(hdf5_default_chunk_cache_bytes)},
            {"chunk_cache_default", !o_.chunk_cache_bytes.has_value()}};
}

std::size_t Loader::batch_bytes(const Batch& batch) const {
    std::int64_t records = 0;
    for (const Sample& sample : batch.samples)
        records += sample.count;
    return static_cast<std::size_t>(records * layout_.record_bytes);
}

void Loader::start_workers(int epoch, int generation) {
    std::vector<pid_t> pids = pool_->start();
    progress_.new_workers();
    // The seeds PyTorch would give them: a new base seed per iterator, + worker id.
    const std::uint64_t base_seed = splitmix::mix(
        o_.pattern.seed ^ splitmix::mix(static_cast<std::uint64_t>(generation) + splitmix::gamma));
    const std::int64_t now = boottime_now_ns();
    for (std::size_t w = 0; w < pids.size(); ++w)
        events_.event({{"event", "worker"},
                       {"worker", w},
                       {"pid", pids[w]},
                       {"generation", generation},
                       {"epoch", epoch},
                       {"seed", base_seed + w},
                       {"boot_ns", now}});
}

void Loader::note_progress(const Batch& batch, int worker, const EpochStats& stats) {
    progress_.add(batch, worker);
    const std::int64_t now = boottime_now_ns();
    if (progress_.due(now)) events_.event(progress_.event(stats.epoch, stats.generation, now));
}

void Loader::consume(const std::byte* data, std::size_t bytes, std::int64_t batch_number) {
    if (staging_) { // pin_memory: copy into page-locked staging before the training step
        std::byte* block = staging_->block(batch_number);
        std::memcpy(block, data, bytes);
        data = block;
    }
    // The training step reads its input: one word per page is enough to map every page.
    std::uint64_t sum = 0;
    for (std::size_t offset = 0; offset + sizeof sum <= bytes; offset += 4096) {
        std::uint64_t word;
        std::memcpy(&word, data + offset, sizeof word);
        sum += word;
    }
    summary_.checksum += sum;
    sleep_us(o_.step_us);
}

std::int64_t Loader::load_in_main(const Batch& batch) {
    std::int64_t bytes = 0;
    for (const Sample& sample : batch.samples) {
        bytes += reader_.read(sample, main_batch_.get() + bytes);
        sleep_us(o_.transform_us * sample.count); // per record
        if (heap_)
            for (std::int64_t i = 0; i < sample.count; ++i)
                heap_->visit(sample.index + i);
    }
    consume(main_batch_.get(), static_cast<std::size_t>(bytes), batch.number);
    return bytes;
}

void Loader::run_batches_in_workers(const std::vector<Batch>& batches, EpochStats& stats) {
    const auto total = static_cast<std::int64_t>(batches.size());
    std::vector<char> done(batches.size(), 0);
    std::int64_t next_send = 0, next_take = 0;
    auto send_next = [&] {
        const Batch& batch = batches[static_cast<std::size_t>(next_send)];
        TaskHeader header{batch.number, static_cast<std::int32_t>(next_send % in_flight_),
                          static_cast<std::int32_t>(batch.samples.size())};
        pool_->send(batch.worker, header, batch.samples);
        ++next_send;
    };
    // Like _MultiProcessingDataLoaderIter: prefetch x W batches out, then one more per batch
    // taken, and batches are taken in order.
    while (next_send < total && next_send - next_take < in_flight_)
        send_next();
    while (next_take < total) {
        while (!done[static_cast<std::size_t>(next_take)]) {
            TaskResult result = pool_->receive();
            done[static_cast<std::size_t>(result.batch_number)] = 1;
            stats.bytes_read += result.bytes_read;
            stats.batches_per_worker[static_cast<std::size_t>(result.worker)] += 1;
            note_progress(batches[static_cast<std::size_t>(result.batch_number)], result.worker,
                          stats);
        }
        const Batch& batch = batches[static_cast<std::size_t>(next_take)];
        consume(batch_buffers_->data() +
                    static_cast<std::size_t>(next_take % in_flight_) * slot_bytes_,
                batch_bytes(batch), batch.number);
        ++next_take;
        if (next_send < total) send_next();
    }
}

EpochStats Loader::run_epoch(int epoch, int generation, std::int64_t start_boot_ns) {
    EpochStats stats;
    stats.epoch = epoch;
    stats.generation = generation;
    stats.start_boot_ns = start_boot_ns;
    const std::vector<Batch> batches = epoch_batches(o_.pattern, layout_.record_count, epoch);
    for (const Batch& batch : batches)
        stats.samples += static_cast<std::int64_t>(batch.samples.size());
    stats.batches = static_cast<std::int64_t>(batches.size());
    stats.batches_per_worker.assign(static_cast<std::size_t>(std::max(workers_, 0)), 0);
    if (workers_ == 0) {
        for (const Batch& batch : batches) {
            stats.bytes_read += load_in_main(batch);
            note_progress(batch, -1, stats);
        }
    } else {
        run_batches_in_workers(batches, stats);
    }
    stats.end_boot_ns = boottime_now_ns();
    events_.event(progress_.event(epoch, generation, stats.end_boot_ns));
    events_.marker("epoch " + std::to_string(epoch) + " end", stats.end_boot_ns);
    events_.event({{"event", "epoch"},
                   {"epoch", epoch},
                   {"generation", generation},
                   {"start_boot_ns", stats.start_boot_ns},
                   {"end_boot_ns", stats.end_boot_ns},
                   {"samples", stats.samples},
                   {"batches", stats.batches},
                   {"bytes_read", stats.bytes_read},
                   {"batches_per_worker", stats.batches_per_worker}});
    return stats;
}

LoaderSummary Loader::run() {
    events_.event({{"event", "config"},
                   {"dataset", std::filesystem::absolute(layout_.path).string()},
                   // Canonical: the recorder names mapped files by their /proc/PID/maps path.
                   {"data_file", std::filesystem::weakly_canonical(layout_.data_file).string()},
                   {"kind", to_string(layout_.kind)},
                   {"description", layout_.description},
                   {"records", layout_.record_count},
                   {"record_bytes", layout_.record_bytes},
                   {"reader", reader_.describe()},
                   {"pattern", to_string(o_.pattern.pattern)},
                   {"batch", o_.pattern.batch},
                   {"drop_last", o_.pattern.drop_last},
                   {"workers", workers_},
                   {"prefetch", o_.prefetch},
                   {"persistent", o_.persistent},
                   {"pin", o_.pin},
                   // HDF5 reads with pread whatever --read says (its sec2 driver)
                   {"read", layout_.kind == DatasetKind::hdf5 ? "pread" : to_string(o_.read)},
                   {"advice", to_string(o_.advice)},
                   {"lmdb_open", to_string(o_.lmdb_open)},
                   {"readahead", o_.readahead},
                   {"hdf5", hdf5_config()},
                   {"cow_heap_mib", o_.cow_heap_mib},
                   {"prefork_anon_mib", o_.prefork_anon_mib},
                   {"leak_mib_per_epoch", o_.leak_mib_per_epoch},
                   {"leak_worker", o_.leak_worker},
                   {"reopen_each_epoch", o_.reopen_each_epoch},
                   {"transform_us", o_.transform_us},
                   {"subset", o_.pattern.subset},
                   {"seed", o_.pattern.seed},
                   {"epochs", o_.epochs},
                   {"batch_ring_bytes", summary_.batch_ring_bytes},
                   {"pin_staging_bytes", summary_.pin_staging_bytes}});
    for (int epoch = 0; epoch < o_.epochs; ++epoch) {
        // Persistent workers are one generation; others are forked anew for every epoch.
        const int generation = o_.persistent ? 0 : epoch;
        // The start marker asks the recorder for a sample: after a fork, so that it catches the
        // new workers before they copy much of main (copy_on_read compares their first sample
        // with their last); before persistent workers hear of a new epoch, so that their
        // epoch-start work (--leak-per-epoch, --reopen-each-epoch) falls inside it, never in the
        // previous epoch's end (a sample in between makes a leak of 8 MiB per epoch look like
        // 5.7 or 6, as two CI runs measured).
        const bool fork = workers_ > 0 && !pool_->running();
        if (fork) start_workers(epoch, generation);
        const std::int64_t start_boot_ns = boottime_now_ns();
        events_.marker("epoch " + std::to_string(epoch) + " start", start_boot_ns);
        if (workers_ > 0 && !fork) {
            pool_->new_epoch();
            // Where the workers have epoch-start work, a sample of them after it and before the
            // first batch: the moment an epoch starts low again with --reopen-each-epoch (the
            // start marker's sample races with the workers' reopening). Not an epoch marker.
            if (epoch > 0 && (o_.reopen_each_epoch || o_.leak_mib_per_epoch > 0)) {
                const std::int64_t ready_ns = boottime_now_ns();
                events_.marker("workers ready for epoch " + std::to_string(epoch), ready_ns);
                events_.wait_until_sampled(ready_ns);
            }
        } else if (workers_ == 0 && o_.reopen_each_epoch && epoch > 0)
            reader_.reopen();
        summary_.epochs.push_back(run_epoch(epoch, generation, start_boot_ns));
        // Let the recorder take its epoch-end sample first: of workers about to exit, and of
        // persistent ones before the next epoch moves their figures (the diagnosis compares
        // epoch ends; a sample taken after the next epoch began would shift growth by an epoch).
        if (workers_ > 0) events_.wait_until_sampled(summary_.epochs.back().end_boot_ns);
        if (workers_ > 0 && !o_.persistent) pool_->stop();
        sleep_us(o_.epoch_pause_ms * 1000);
    }
    if (pool_) pool_->stop();
    if (staging_) summary_.pin_problem = staging_->problem();
    events_.event({{"event", "end"},
                   {"status", "ok"},
                   {"checksum", summary_.checksum},
                   {"pin_problem", summary_.pin_problem}});
    return summary_;
}

} // namespace

double EpochStats::samples_per_second() const {
    return seconds() > 0 ? static_cast<double>(samples) / seconds() : 0.0;
}

double EpochStats::mib_per_second() const {
    return seconds() > 0 ? static_cast<double>(bytes_read) / (1 << 20) / seconds() : 0.0;
}

LoaderOptions check_loader(const LoaderOptions& options, DatasetLayout& layout) {
    layout = inspect_dataset(options.dataset, options.record_bytes, options.hdf5_dataset);
    LoaderOptions resolved = options;
    if (resolved.pattern.pattern == Pattern::trace) {
        if (!resolved.trace_path)
            throw LoaderError("--pattern trace needs --trace FILE (one index per line)");
        resolved.pattern.trace = read_trace(*resolved.trace_path, layout.record_count);
    }
    validate(resolved.pattern, layout.record_count);
    validate_loader(resolved, layout);
    // Too big for /dev/shm or for the machine is bad input too.
    check_memory(resolved, layout, plan_buffers(resolved, layout));
    return resolved;
}

// A worker that exits closes its task pipe: writing to it must fail with EPIPE (and be reported
// with the worker's reason), not kill the main process with SIGPIPE.
class IgnoreSigpipe {
  public:
    IgnoreSigpipe() {
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ignore, &previous_);
    }
    ~IgnoreSigpipe() { sigaction(SIGPIPE, &previous_, nullptr); }
    IgnoreSigpipe(const IgnoreSigpipe&) = delete;
    IgnoreSigpipe& operator=(const IgnoreSigpipe&) = delete;

  private:
    struct sigaction previous_ {};
};

LoaderSummary run_loader(const LoaderOptions& options) {
    DatasetLayout layout;
    const LoaderOptions resolved = check_loader(options, layout);
    const BufferPlan plan = plan_buffers(resolved, layout);
    IgnoreSigpipe ignore_sigpipe;
    try {
        Loader loader(resolved, layout, plan);
        return loader.run();
    } catch (const std::exception& e) {
        LoaderEvents(resolved).event(
            {{"event", "end"}, {"status", "error"}, {"message", e.what()}});
        // A dataset found damaged mid-run is bad input like one found before (exit 2).
        if (dynamic_cast<const LoaderRunError*>(&e) || dynamic_cast<const DatasetError*>(&e)) throw;
        throw LoaderRunError(e.what());
    }
}

} // namespace loaderlens::probes
