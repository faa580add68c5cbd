// SPDX-License-Identifier: MIT
// The reference loader's options, shared by `load` (run it) and `replay` (run it under the
// recorder): the same flags, parsed once, and written back as arguments for the child `load`.
#pragma once

#include "commands.hpp"
#include "loaderlens/probes/loader.hpp"

#include <optional>
#include <string>
#include <vector>

namespace loaderlens::cli {

struct LoaderFlags {
    std::string dataset;
    std::optional<std::string> record_size;
    std::string pattern = "shuffle";
    std::int64_t batch = 32;
    bool drop_last = false;
    int workers = 4;
    int prefetch = 2;
    bool persistent = false;
    bool pin = false;
    int epochs = 1;
    std::uint64_t seed = 0;
    double subset = 1.0;
    std::int64_t num_samples = 0;
    int rank = 0, world = 1;
    std::int64_t shard_size = 0;
    double zipf_s = 1.1;
    std::int64_t window = 0;
    std::optional<std::string> trace;
    std::string read = "mmap-view";
    std::string advice = "normal";
    std::string lmdb_open = "worker";
    std::string readahead = "on";
    std::string hdf5_dataset;
    std::string hdf5_open = "worker";
    std::optional<std::string> chunk_cache;
    std::int64_t cow_heap_mib = 0;
    std::int64_t prefork_anon_mib = 0;
    std::int64_t leak_mib_per_epoch = 0;
    int leak_worker = 0;
    bool reopen_each_epoch = false;
    std::string step_time = "0";
    std::string transform_time = "0";
    std::string epoch_pause = "0";
};

// Bounds of the whole-number flags (the loader's own checks refine them against the dataset):
// what the loader can do, and far enough from 2^63 that no product of them overflows.
inline constexpr std::int64_t max_batch = 1 << 24;
inline constexpr int max_epochs = 1'000'000;
inline constexpr std::int64_t max_num_samples = 1 << 28; // 2 GiB of indices in main per epoch
inline constexpr int max_world = 1 << 20;
inline constexpr std::int64_t max_records = std::int64_t{1} << 40;
inline constexpr int max_in_flight = 4096; // prefetch x workers, as the loader allows
inline constexpr std::int64_t max_cow_heap_mib = 1 << 20;

void add_loader_flags(CLI::App* sub, LoaderFlags& flags);

// The loader's options, or nothing after a one-line error naming the flag.
std::optional<probes::LoaderOptions> to_loader_options(const LoaderFlags& flags);

// What the options ask of this dataset that it cannot give (a one-line reason naming the flag),
// once the loader's own checks have passed: more ranks than records.
std::optional<std::string> dataset_bounds_problem(const probes::LoaderOptions& options,
                                                  const probes::DatasetLayout& layout);

// The loader's options checked as the loader checks them (check_loader) and against the
// dataset (dataset_bounds_problem), with its layout; nothing after the one-line error.
std::optional<probes::LoaderOptions> checked_loader_options(const LoaderFlags& flags,
                                                            probes::DatasetLayout& layout);

// Arguments that make `loaderlens load` run exactly these options (the dataset last, after --).
std::vector<std::string> to_load_arguments(const LoaderFlags& flags);

} // namespace loaderlens::cli
