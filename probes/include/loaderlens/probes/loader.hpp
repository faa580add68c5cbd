// SPDX-License-Identifier: MIT
// The reference loader: a C++ re-creation of the PyTorch DataLoader's process model.
//
// The main process runs the sampler and the batching, forks W workers, sends batch k of an epoch
// to worker k mod W, and keeps prefetch x W batches in flight. Workers read their samples from the
// dataset and collate them into shared-memory batch buffers that the main process consumes (with
// pin, main copies each batch into mlock'ed staging buffers first). Non-persistent workers are
// re-forked every epoch; persistent ones live across epochs. See docs/loader.md.
#pragma once

#include "loaderlens/probes/dataset.hpp"
#include "loaderlens/probes/patterns.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace loaderlens::probes {

// How a worker gets a sample's bytes before collating them into the batch.
enum class ReadMode {
    mmap_view, // np.load(mmap_mode='r')[i]: a view of the map, copied once by collate
    mmap_copy, // np.array(view): a private copy first, then collate
    pread,     // f.seek/f.read into a private buffer, then collate
};
enum class Advice { normal, random, sequential, willneed, dontneed_after_use };
enum class LmdbOpen {
    parent, // the environment is opened in the main process before fork (the common mistake)
    worker, // each worker opens its own on first use (the documented way)
};

enum class Hdf5Open {
    parent, // H5Fopen/H5Dopen in main before fork, workers use the inherited handles (h5py.File
            // in Dataset.__init__: the common pattern)
    worker, // each worker opens the file on first use (the advised way)
};
// HDF5's own default chunk cache: 1 MiB per open dataset (H5D_CHUNK_CACHE_NBYTES_DEFAULT).
inline constexpr std::int64_t hdf5_default_chunk_cache_bytes = 1 << 20;

std::optional<ReadMode> parse_read_mode(std::string_view name);
std::optional<Advice> parse_advice(std::string_view name);
std::optional<LmdbOpen> parse_lmdb_open(std::string_view name);
std::optional<Hdf5Open> parse_hdf5_open(std::string_view name);
const char* to_string(ReadMode mode);
const char* to_string(Advice advice);
const char* to_string(LmdbOpen open);
const char* to_string(Hdf5Open open);

struct LoaderOptions {
    std::string dataset;
    std::optional<std::int64_t> record_bytes; // raw datasets only
    PatternOptions pattern;                   // pattern, batch, drop_last, workers, seed...
    std::optional<std::string> trace_path;    // trace: read into pattern.trace once the dataset
                                              // size is known
    int epochs = 1;
    int prefetch = 2;
    bool persistent = false;
    bool pin = false;
    ReadMode read = ReadMode::mmap_view;
    Advice advice = Advice::normal;
    LmdbOpen lmdb_open = LmdbOpen::worker;
    bool readahead = true; // LMDB: off = MDB_NORDAHEAD
    // HDF5: the dataset in the file (empty: the only one, else "data"), where it is opened, and
    // the chunk cache per open dataset (H5Pset_chunk_cache; empty: HDF5's default, 1 MiB).
    std::string hdf5_dataset;
    Hdf5Open hdf5_open = Hdf5Open::worker;
    std::optional<std::int64_t> chunk_cache_bytes;
    std::int64_t cow_heap_mib = 0;
    // MiB of anonymous memory main fills before fork and never frees, that workers inherit and
    // never touch (np.load without mmap, a tensor built in Dataset.__init__).
    std::int64_t prefork_anon_mib = 0;
    // A leak: worker `leak_worker` allocates and fills this many MiB at each epoch's start and
    // keeps it.
    std::int64_t leak_mib_per_epoch = 0;
    int leak_worker = 0;
    bool reopen_each_epoch = false;
    std::int64_t step_us = 0; // simulated training step in main, per batch
    // Simulated per-sample work where the sample is loaded (decode, augmentation in
    // __getitem__): slept, so that workers scale as they would with a core each.
    std::int64_t transform_us = 0;
    std::int64_t epoch_pause_ms = 0;         // pause after each epoch (validation, checkpointing)
    std::optional<std::string> markers_path; // LOADERLENS_MARKERS
    std::optional<std::string> events_path;  // LOADERLENS_LOADER_EVENTS
    std::optional<std::string> sampled_path; // LOADERLENS_SAMPLED
    // The same files as descriptors `record` handed over, "FD:DEVICE:INODE" (LOADERLENS_*_FD):
    // used instead of the names when they are still those files (docs/recording.md).
    std::optional<std::string> markers_fd, events_fd, sampled_fd;
};

// Bad options or a dataset the loader cannot use (found before anything runs).
struct LoaderError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// The run itself failed: a worker died or could not read its samples.
struct LoaderRunError : LoaderError {
    using LoaderError::LoaderError;
};

struct EpochStats {
    int epoch = 0;
    int generation = 0; // of the workers that loaded it
    std::int64_t start_boot_ns = 0, end_boot_ns = 0;
    std::int64_t samples = 0, batches = 0;
    std::int64_t bytes_read = 0;                  // bytes the workers took from the dataset
    std::vector<std::int64_t> batches_per_worker; // by worker id (empty with workers == 0)
    double seconds() const { return (end_boot_ns - start_boot_ns) / 1e9; }
    double samples_per_second() const;
    double mib_per_second() const;
};

struct LoaderSummary {
    DatasetLayout dataset;
    std::vector<EpochStats> epochs;
    std::int64_t batch_ring_bytes = 0;  // shared-memory batch buffers: prefetch x W x batch
    std::int64_t pin_staging_bytes = 0; // 0 without pin
    std::string pin_problem;            // why staging could not be locked, empty if it was
    std::uint64_t checksum = 0;         // of every byte main consumed (keeps the work honest)
};

// Checks the options against the dataset without running anything; returns the options with the
// trace read in. Throws DatasetError, PatternError or LoaderError, each one line.
LoaderOptions check_loader(const LoaderOptions& options, DatasetLayout& layout);

// check_loader(), then runs. A worker that fails stops the run with a LoaderRunError naming the
// worker and why.
LoaderSummary run_loader(const LoaderOptions& options);

} // namespace loaderlens::probes
