// SPDX-License-Identifier: MIT
#include "loader_options.hpp"

#include "numeric_option.hpp"

#include <charconv>
#include <cstdint>
#include <limits>

namespace loaderlens::cli {

void add_loader_flags(CLI::App* sub, LoaderFlags& f) {
    sub->add_option("dataset", f.dataset,
                    "Dataset: .npy file, raw file, LMDB directory, or HDF5 file")
        ->required();
    sub->add_option("--record-size", f.record_size, "Raw datasets: bytes per record (64KiB...)");
    auto* g = sub->add_option_group("Sampling");
    g->add_option("--pattern", f.pattern,
                  "sequential, shuffle, random, distributed, shards, zipf, windows, trace")
        ->capture_default_str();
    add_whole_number_option<std::int64_t>(g, "--batch", f.batch, 1, max_batch, "Samples per batch");
    g->add_flag("--drop-last", f.drop_last, "Drop the last incomplete batch");
    add_whole_number_option(g, "--epochs", f.epochs, 1, max_epochs, "Epochs");
    add_whole_number_option<std::uint64_t>(g, "--seed", f.seed, 0, UINT64_MAX,
                                           "Seed of every random choice");
    add_real_option(g, "--subset", f.subset, 0, 1, true, "in (0, 1]",
                    "random_split: fraction of the dataset used");
    add_whole_number_option<std::int64_t>(
        g, "--num-samples", f.num_samples, 0, max_num_samples,
        "random, zipf, windows: samples per epoch (0: the pattern's default; main holds an "
        "epoch's indices, 8 bytes each)");
    add_whole_number_option(g, "--rank", f.rank, 0, max_world - 1, "distributed: this rank");
    add_whole_number_option(g, "--world", f.world, 1, max_world,
                            "distributed: number of ranks, at most one per record");
    add_whole_number_option<std::int64_t>(g, "--shard-size", f.shard_size, 0, max_records,
                                          "shards: records per shard (0: 1024)");
    add_real_option(g, "--zipf-s", f.zipf_s, 0, std::numeric_limits<double>::max(), true, "above 0",
                    "zipf: exponent");
    add_whole_number_option<std::int64_t>(g, "--window", f.window, 0, max_records,
                                          "windows: records per span");
    g->add_option("--trace", f.trace, "trace: file with one sample index per line");
    auto* p = sub->add_option_group("Processes");
    add_whole_number_option(p, "--workers", f.workers, 0, max_in_flight,
                            "Worker processes (0: main loads)");
    add_whole_number_option(p, "--prefetch", f.prefetch, 1, max_in_flight,
                            "Batches in flight per worker");
    p->add_flag("--persistent", f.persistent, "Keep workers across epochs");
    p->add_flag("--pin", f.pin, "Copy batches into locked staging memory (pin_memory)");
    add_whole_number_option<std::int64_t>(p, "--cow-heap", f.cow_heap_mib, 0, max_cow_heap_mib,
                                          "MiB of small objects main builds before fork; workers "
                                          "touch them like CPython refcounts");
    add_whole_number_option<std::int64_t>(p, "--prefork-anon", f.prefork_anon_mib, 0,
                                          max_cow_heap_mib,
                                          "MiB of anonymous memory main fills before fork and "
                                          "keeps (np.load without mmap); workers inherit it");
    add_whole_number_option<std::int64_t>(p, "--leak-per-epoch", f.leak_mib_per_epoch, 0,
                                          max_cow_heap_mib,
                                          "MiB worker --leak-worker allocates at each epoch's "
                                          "start and never frees (a leak, for the diagnosis)");
    add_whole_number_option(p, "--leak-worker", f.leak_worker, 0, max_in_flight - 1,
                            "The worker that leaks (--leak-per-epoch)");
    p->add_option("--step-time", f.step_time, "Simulated training step per batch (5ms, 200us)")
        ->capture_default_str();
    p->add_option("--transform-time", f.transform_time,
                  "Simulated work per sample where it is loaded (decode, augmentation; slept, so "
                  "workers scale as with a core each), e.g. 2ms")
        ->capture_default_str();
    p->add_option("--epoch-pause", f.epoch_pause, "Pause after each epoch (1s, 500ms)")
        ->capture_default_str();
    auto* m = sub->add_option_group("Memory");
    m->add_option("--read", f.read, "mmap-view, mmap-copy or pread")->capture_default_str();
    m->add_option("--advice", f.advice,
                  "normal, random, sequential, willneed or dontneed-after-use")
        ->capture_default_str();
    m->add_option("--lmdb-open", f.lmdb_open, "LMDB: open the env in the parent or each worker")
        ->capture_default_str();
    m->add_option("--readahead", f.readahead, "LMDB: on, or off (MDB_NORDAHEAD)")
        ->capture_default_str();
    m->add_option("--hdf5-dataset", f.hdf5_dataset,
                  "HDF5: the dataset to read (default: the only one in the file, else data)");
    m->add_option("--hdf5-open", f.hdf5_open,
                  "HDF5: open the file in the parent before fork, or in each worker")
        ->capture_default_str();
    m->add_option("--chunk-cache", f.chunk_cache,
                  "HDF5: chunk cache per process and dataset (H5Pset_chunk_cache; default 1MiB)");
    m->add_flag("--reopen-each-epoch", f.reopen_each_epoch,
                "Workers drop and reopen their map/env at each epoch");
}

std::optional<probes::LoaderOptions> to_loader_options(const LoaderFlags& f) {
    using namespace probes;
    LoaderOptions o;
    o.dataset = f.dataset;
    auto pattern = parse_pattern(f.pattern);
    auto read = parse_read_mode(f.read);
    auto advice = parse_advice(f.advice);
    auto lmdb_open = parse_lmdb_open(f.lmdb_open);
    auto step = parse_duration_us(f.step_time);
    auto pause = parse_duration_us(f.epoch_pause);
    auto transform = parse_duration_us(f.transform_time);
    auto record_bytes = f.record_size ? parse_size(*f.record_size) : std::nullopt;
    auto hdf5_open = parse_hdf5_open(f.hdf5_open);
    // 0 turns HDF5's chunk cache off.
    auto chunk_cache = f.chunk_cache ? parse_size_or_zero(*f.chunk_cache) : std::nullopt;
    // The first flag whose value did not parse, with what it expects.
    struct Check {
        bool ok;
        const char* flag;
        const std::string& value;
        const char* expected;
    };
    const Check checks[] = {
        {pattern.has_value(), "--pattern", f.pattern, "one of the patterns in --help"},
        {read.has_value(), "--read", f.read, "mmap-view, mmap-copy or pread"},
        {advice.has_value(), "--advice", f.advice,
         "normal, random, sequential, willneed or dontneed-after-use"},
        {lmdb_open.has_value(), "--lmdb-open", f.lmdb_open, "parent or worker"},
        {f.readahead == "on" || f.readahead == "off", "--readahead", f.readahead, "on or off"},
        {step.has_value(), "--step-time", f.step_time, "a duration like 5ms or 200us"},
        {pause.has_value(), "--epoch-pause", f.epoch_pause, "a duration like 500ms or 1s"},
        {transform.has_value(), "--transform-time", f.transform_time,
         "a duration like 2ms or 500us"},
        {!f.record_size || record_bytes.has_value(), "--record-size",
         f.record_size ? *f.record_size : f.dataset, "a size like 4096 or 64KiB"},
        {hdf5_open.has_value(), "--hdf5-open", f.hdf5_open, "parent or worker"},
        {!f.chunk_cache || chunk_cache.has_value(), "--chunk-cache",
         f.chunk_cache ? *f.chunk_cache : f.dataset, "a size like 0, 1MiB or 64MiB"},
    };
    if (f.dataset.empty()) {
        print_error("\"\": the dataset's name is empty");
        return std::nullopt;
    }
    if (f.trace && f.trace->empty()) {
        print_error("--trace \"\": the file name is empty");
        return std::nullopt;
    }
    for (const Check& check : checks) {
        if (check.ok) continue;
        print_error(std::string(check.flag) + " " + check.value + ": expected " + check.expected);
        return std::nullopt;
    }
    o.record_bytes = record_bytes;
    o.pattern.pattern = *pattern;
    o.pattern.seed = f.seed;
    o.pattern.num_samples = f.num_samples;
    o.pattern.rank = f.rank;
    o.pattern.world = f.world;
    o.pattern.shard_size = f.shard_size;
    o.pattern.zipf_s = f.zipf_s;
    o.pattern.window = f.window;
    o.pattern.subset = f.subset;
    o.pattern.batch = f.batch;
    o.pattern.drop_last = f.drop_last;
    o.pattern.workers = f.workers;
    o.trace_path = f.trace;
    o.epochs = f.epochs;
    o.prefetch = f.prefetch;
    o.persistent = f.persistent;
    o.pin = f.pin;
    o.read = *read;
    o.advice = *advice;
    o.lmdb_open = *lmdb_open;
    o.readahead = f.readahead == "on";
    o.hdf5_dataset = f.hdf5_dataset;
    o.hdf5_open = *hdf5_open;
    o.chunk_cache_bytes = chunk_cache;
    o.cow_heap_mib = f.cow_heap_mib;
    o.prefork_anon_mib = f.prefork_anon_mib;
    o.leak_mib_per_epoch = f.leak_mib_per_epoch;
    o.leak_worker = f.leak_worker;
    o.reopen_each_epoch = f.reopen_each_epoch;
    o.step_us = *step;
    o.epoch_pause_ms = *pause / 1000;
    o.transform_us = *transform;
    return o;
}

std::optional<probes::LoaderOptions> checked_loader_options(const LoaderFlags& flags,
                                                            probes::DatasetLayout& layout) {
    auto options = to_loader_options(flags);
    if (!options) return std::nullopt;
    try {
        probes::check_loader(*options, layout);
    } catch (const std::runtime_error& e) {
        print_error(e.what());
        return std::nullopt;
    }
    if (auto problem = dataset_bounds_problem(*options, layout)) {
        print_error(*problem);
        return std::nullopt;
    }
    return options;
}

std::optional<std::string> dataset_bounds_problem(const probes::LoaderOptions& options,
                                                  const probes::DatasetLayout& layout) {
    // DistributedSampler pads the epoch to a multiple of the world size: with more ranks than
    // records most ranks would only repeat padding, and the padded epoch grows with the world.
    if (options.pattern.pattern == probes::Pattern::distributed &&
        options.pattern.world > layout.record_count)
        return "--world " + std::to_string(options.pattern.world) + ": more ranks than the " +
               std::to_string(layout.record_count) + " records of " + layout.path;
    return std::nullopt;
}

std::vector<std::string> to_load_arguments(const LoaderFlags& f) {
    auto number = [](auto value) { // shortest text that reads back as the same value
        char text[32];
        auto end = std::to_chars(text, text + sizeof text, value).ptr;
        return std::string(text, end);
    };
    std::vector<std::string> args{"--pattern",        f.pattern,
                                  "--batch",          number(f.batch),
                                  "--epochs",         number(f.epochs),
                                  "--seed",           number(f.seed),
                                  "--subset",         number(f.subset),
                                  "--num-samples",    number(f.num_samples),
                                  "--rank",           number(f.rank),
                                  "--world",          number(f.world),
                                  "--shard-size",     number(f.shard_size),
                                  "--zipf-s",         number(f.zipf_s),
                                  "--window",         number(f.window),
                                  "--workers",        number(f.workers),
                                  "--prefetch",       number(f.prefetch),
                                  "--cow-heap",       number(f.cow_heap_mib),
                                  "--prefork-anon",   number(f.prefork_anon_mib),
                                  "--leak-per-epoch", number(f.leak_mib_per_epoch),
                                  "--leak-worker",    number(f.leak_worker),
                                  "--step-time",      f.step_time,
                                  "--epoch-pause",    f.epoch_pause,
                                  "--transform-time", f.transform_time,
                                  "--read",           f.read,
                                  "--advice",         f.advice,
                                  "--lmdb-open",      f.lmdb_open,
                                  "--readahead",      f.readahead,
                                  "--hdf5-open",      f.hdf5_open};
    if (f.record_size) args.insert(args.end(), {"--record-size", *f.record_size});
    if (f.trace) args.insert(args.end(), {"--trace", *f.trace});
    if (!f.hdf5_dataset.empty()) args.insert(args.end(), {"--hdf5-dataset", f.hdf5_dataset});
    if (f.chunk_cache) args.insert(args.end(), {"--chunk-cache", *f.chunk_cache});
    for (auto [set, flag] : {std::pair{f.drop_last, "--drop-last"},
                             {f.persistent, "--persistent"},
                             {f.pin, "--pin"},
                             {f.reopen_each_epoch, "--reopen-each-epoch"}})
        if (set) args.emplace_back(flag);
    // Last, after "--": a dataset named "-x.npy" is not an option.
    args.insert(args.end(), {"--", f.dataset});
    return args;
}

} // namespace loaderlens::cli
