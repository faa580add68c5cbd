// SPDX-License-Identifier: MIT
// Access patterns of the reference loader: which samples an epoch visits, in which order, and how
// they are batched and handed to workers. Pure functions of (options, dataset size, epoch), so
// every sequence is reproducible and testable without processes.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loaderlens::probes {

struct PatternError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class Pattern { sequential, shuffle, random, distributed, shards, zipf, windows, trace };
std::optional<Pattern> parse_pattern(std::string_view name);
const char* to_string(Pattern pattern);

struct PatternOptions {
    Pattern pattern = Pattern::shuffle;
    std::uint64_t seed = 0;
    // random (with replacement), zipf, windows: samples drawn per epoch; 0 = the dataset size
    // (windows: dataset size / window).
    std::int64_t num_samples = 0;
    int rank = 0, world = 1;         // distributed: this rank's share of a padded, shuffled epoch
    std::int64_t shard_size = 0;     // shards: records per shard; 0 = 1024
    double zipf_s = 1.1;             // zipf: exponent of the rank-frequency law
    std::int64_t window = 0;         // windows: records per span (required for windows)
    std::vector<std::int64_t> trace; // trace: the indices, replayed identically every epoch
    double subset = 1.0;             // random_split: fraction of the dataset kept (0, 1]
    std::int64_t batch = 1;
    bool drop_last = false;
    int workers = 0; // 0: the main process loads (PyTorch num_workers=0)
};

// One item of a batch: `count` consecutive records from `index` (count > 1 only for windows).
struct Sample {
    std::int64_t index = 0;
    std::int64_t count = 1;
    bool operator==(const Sample&) const = default;
};

struct Batch {
    std::int64_t number = 0; // position in the epoch, from 0
    int worker = -1;         // the worker that loads it; -1 with workers == 0
    std::vector<Sample> samples;
};

// An epoch's samples are listed in memory (about 50 bytes each while it is built): at most this
// many, whatever the options (--num-samples, --world, the dataset size) ask for. A trace file has
// at most this many indices and `max_trace_bytes` bytes.
constexpr std::int64_t max_samples_per_epoch = std::int64_t{1} << 26;
constexpr std::int64_t max_trace_bytes = std::int64_t{1} << 30;

// Checks the options against the dataset size; throws PatternError with a one-line message
// naming the option (e.g. "--window 0: windows needs --window N with 1 <= N <= 1000"), also when
// an epoch would list more than max_samples_per_epoch samples.
void validate(const PatternOptions& options, std::int64_t dataset_size);

// The dataset indices kept by random_split(fraction) with generator seed `seed`: a seeded
// permutation of [0, n) cut to floor(fraction * n) entries (at least 1).
std::vector<std::int64_t> subset_indices(std::int64_t dataset_size, double fraction,
                                         std::uint64_t seed);

// The samples of epoch `epoch`, in the order the sampler yields them (after subset mapping).
std::vector<Sample> epoch_samples(const PatternOptions& options, std::int64_t dataset_size,
                                  int epoch);

// The epoch's batches. Map-style patterns: batch k goes to worker k mod W. shards is
// iterable-style like WebDataset: worker w reads shards w, w+W, ... of the epoch's shuffled
// shard order, sequentially inside each shard, batches its own stream, and the main process
// takes batches round-robin from the workers that still have some.
std::vector<Batch> epoch_batches(const PatternOptions& options, std::int64_t dataset_size,
                                 int epoch);

// Reads a trace file: one index per line (blank lines and lines starting with '#' skipped).
// Throws PatternError "FILE:LINE: ..." for text that is not an index or an index >= dataset_size,
// and "FILE: ..." for a file that is not a regular file (a FIFO or a device such as /dev/zero
// has no end to read to), is larger than max_trace_bytes or holds more than
// max_samples_per_epoch indices. Memory: the indices, never the whole text.
std::vector<std::int64_t> read_trace(const std::string& path, std::int64_t dataset_size);

} // namespace loaderlens::probes
