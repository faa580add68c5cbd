// SPDX-License-Identifier: MIT
// Access patterns of the reference loader (see patterns.hpp). Every random choice comes from our
// own generator and our own bounded-integer and shuffle code, not from <random>'s distributions
// or std::shuffle, whose results differ between standard libraries: a (seed, epoch) must name the
// same sequence on every machine so that recordings can be compared.
#include "loaderlens/probes/patterns.hpp"

#include "splitmix.hpp"
#include "trace_parser.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

namespace loaderlens::probes {
namespace {

constexpr std::int64_t default_shard_size = 1024;

// splitmix64's output function serves both as the generator's output and to derive independent
// stream keys.
using splitmix::mix;
constexpr std::uint64_t golden_gamma = splitmix::gamma;

// What a random stream is for. Each use gets its own stream, so that e.g. the subset of a seed
// does not change when the epoch (and with it the shuffle) changes, and adding a use elsewhere
// never shifts an existing sequence.
enum class Purpose : std::uint64_t {
    subset = 1,
    shuffle,
    random,
    distributed,
    shard_order,
    zipf_hot_set,
    zipf_draws,
    windows,
};

// splitmix64: tiny state, full period 2^64, and its output is specified bit for bit.
class Generator {
  public:
    // A stream that depends on the seed and the purpose only (the same every epoch).
    Generator(std::uint64_t seed, Purpose purpose)
        : state_(mix(mix(seed + golden_gamma) ^
                     (static_cast<std::uint64_t>(purpose) * golden_gamma))) {}
    // A stream that also depends on the epoch.
    Generator(std::uint64_t seed, Purpose purpose, int epoch) : Generator(seed, purpose) {
        state_ = mix(state_ ^ mix(static_cast<std::uint64_t>(epoch) + golden_gamma));
    }

    std::uint64_t next() { return mix(state_ += golden_gamma); }

    // Uniform in [0, bound), bound >= 1, without modulo bias: the lowest 2^64 mod bound words are
    // rejected so that the accepted range is a whole number of copies of [0, bound).
    std::uint64_t below(std::uint64_t bound) {
        const std::uint64_t rejected = (0 - bound) % bound; // == 2^64 mod bound
        for (;;) {
            const std::uint64_t word = next();
            if (word >= rejected) return word % bound;
        }
    }
    std::int64_t below(std::int64_t bound) {
        return static_cast<std::int64_t>(below(static_cast<std::uint64_t>(bound)));
    }

    // Uniform in [0, 1) with 53 random bits (every double of the form k / 2^53).
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  private:
    std::uint64_t state_;
};

// A uniformly random permutation of [0, n) (Fisher–Yates, from the top down).
std::vector<std::int64_t> permutation(std::int64_t n, Generator& generator) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    for (std::int64_t i = n - 1; i > 0; --i)
        std::swap(order[static_cast<std::size_t>(i)],
                  order[static_cast<std::size_t>(generator.below(i + 1))]);
    return order;
}

bool takes_subset(Pattern pattern) {
    return pattern != Pattern::windows && pattern != Pattern::shards && pattern != Pattern::trace;
}

std::int64_t draws_or(std::int64_t num_samples, std::int64_t fallback) {
    return num_samples > 0 ? num_samples : fallback;
}

// Positions in [0, m) as the map-style sampler yields them (before the subset mapping).
std::vector<std::int64_t> sampler_positions(const PatternOptions& options, std::int64_t m,
                                            int epoch) {
    switch (options.pattern) {
    case Pattern::sequential: { // SequentialSampler
        std::vector<std::int64_t> positions(static_cast<std::size_t>(m));
        std::iota(positions.begin(), positions.end(), std::int64_t{0});
        return positions;
    }
    case Pattern::shuffle: { // RandomSampler: a fresh permutation every epoch
        Generator generator(options.seed, Purpose::shuffle, epoch);
        return permutation(m, generator);
    }
    case Pattern::random: { // RandomSampler(replacement=True, num_samples)
        Generator generator(options.seed, Purpose::random, epoch);
        std::vector<std::int64_t> positions(
            static_cast<std::size_t>(draws_or(options.num_samples, m)));
        for (auto& position : positions)
            position = generator.below(m);
        return positions;
    }
    case Pattern::distributed: {
        // DistributedSampler(shuffle=True, drop_last=False): one permutation per epoch shared by
        // all ranks (seeded with seed + epoch, as PyTorch does), padded by repeating it from the
        // start to a multiple of the world size, then rank r takes every world-th from r.
        Generator generator(options.seed + static_cast<std::uint64_t>(epoch), Purpose::distributed);
        std::vector<std::int64_t> indices = permutation(m, generator);
        const std::int64_t per_rank = (m + options.world - 1) / options.world;
        const std::int64_t total = per_rank * options.world;
        indices.reserve(static_cast<std::size_t>(total));
        for (std::int64_t i = m; i < total; ++i)
            indices.push_back(indices[static_cast<std::size_t>(i % m)]);
        std::vector<std::int64_t> positions;
        positions.reserve(static_cast<std::size_t>(per_rank));
        for (std::int64_t i = options.rank; i < total; i += options.world)
            positions.push_back(indices[static_cast<std::size_t>(i)]);
        return positions;
    }
    case Pattern::zipf: {
        // Rank r is drawn with probability proportional to 1 / (r + 1)^s. Ranks map to positions
        // through one permutation that ignores the epoch, so the hot set stays the same samples
        // across epochs but is scattered over the file rather than packed at its start.
        std::vector<double> cumulative(static_cast<std::size_t>(m));
        double total = 0;
        for (std::int64_t rank = 0; rank < m; ++rank)
            cumulative[static_cast<std::size_t>(rank)] = total +=
                std::pow(static_cast<double>(rank + 1), -options.zipf_s);
        Generator hot_set_generator(options.seed, Purpose::zipf_hot_set);
        const std::vector<std::int64_t> position_of_rank = permutation(m, hot_set_generator);
        Generator generator(options.seed, Purpose::zipf_draws, epoch);
        std::vector<std::int64_t> positions(
            static_cast<std::size_t>(draws_or(options.num_samples, m)));
        for (auto& position : positions) {
            const double target = generator.unit() * total;
            auto found = std::upper_bound(cumulative.begin(), cumulative.end(), target);
            // Rounding can leave the last cumulative sum a hair below `total`.
            if (found == cumulative.end()) --found;
            position = position_of_rank[static_cast<std::size_t>(found - cumulative.begin())];
        }
        return positions;
    }
    case Pattern::shards:
    case Pattern::windows:
    case Pattern::trace:
        break;
    }
    throw PatternError(
        fmt::format("--pattern {}: not a map-style sampler", to_string(options.pattern)));
}

// The record streams of an iterable-style sharded epoch: stream s reads shards s, s + S, ... of
// the epoch's shuffled shard order, each shard front to back (like WebDataset with
// split_by_worker). One stream per worker, or a single one when the main process loads.
std::vector<std::vector<Sample>> shard_streams(const PatternOptions& options,
                                               std::int64_t dataset_size, int epoch, int streams) {
    const std::int64_t shard_size =
        options.shard_size > 0 ? options.shard_size : default_shard_size;
    const std::int64_t shards = (dataset_size + shard_size - 1) / shard_size;
    Generator generator(options.seed, Purpose::shard_order, epoch);
    const std::vector<std::int64_t> order = permutation(shards, generator);
    std::vector<std::vector<Sample>> records(static_cast<std::size_t>(streams));
    for (std::int64_t k = 0; k < shards; ++k) {
        auto& stream = records[static_cast<std::size_t>(k % streams)];
        const std::int64_t first = order[static_cast<std::size_t>(k)] * shard_size;
        const std::int64_t end = std::min(dataset_size, first + shard_size);
        for (std::int64_t index = first; index < end; ++index)
            stream.push_back({index, 1});
    }
    return records;
}

// Consecutive chunks of `batch` samples; a short last chunk is kept unless drop_last.
std::vector<std::vector<Sample>> chunks(const std::vector<Sample>& samples, std::int64_t batch,
                                        bool drop_last) {
    std::vector<std::vector<Sample>> result;
    for (std::size_t first = 0; first < samples.size(); first += static_cast<std::size_t>(batch)) {
        const std::size_t end = std::min(samples.size(), first + static_cast<std::size_t>(batch));
        if (drop_last && end - first < static_cast<std::size_t>(batch)) break;
        result.emplace_back(samples.begin() + static_cast<std::ptrdiff_t>(first),
                            samples.begin() + static_cast<std::ptrdiff_t>(end));
    }
    return result;
}

// The longest list an epoch of `options` builds; refuses one longer than max_samples_per_epoch,
// naming what asked for it.
void check_epoch_size(const PatternOptions& options, std::int64_t dataset_size) {
    constexpr std::int64_t most = max_samples_per_epoch;
    const std::string limit = fmt::format("at most {} samples per epoch (each epoch's list is "
                                          "built in memory)",
                                          most);
    if (options.num_samples > most)
        throw PatternError(fmt::format("--num-samples {}: {}", options.num_samples, limit));
    if (options.pattern == Pattern::distributed && options.world > most)
        throw PatternError(fmt::format("--world {}: {}", options.world, limit));
    if (options.pattern == Pattern::trace) {
        if (static_cast<std::int64_t>(options.trace.size()) > most)
            throw PatternError(fmt::format("--trace: {} indices, {}", options.trace.size(), limit));
        return;
    }
    if (options.pattern == Pattern::windows) {
        const std::int64_t spans = dataset_size / std::max<std::int64_t>(options.window, 1);
        if (options.num_samples == 0 && spans > most)
            throw PatternError(fmt::format("the dataset has {} samples: --pattern windows draws "
                                           "{} spans of --window {} each epoch, {}; pass "
                                           "--num-samples N",
                                           dataset_size, spans, options.window, limit));
        return;
    }
    // Every other pattern lists the whole dataset (or a permutation of it) each epoch, unless
    // random draws --num-samples; a subset is a permutation of the whole dataset too.
    const bool draws_only =
        options.pattern == Pattern::random && options.num_samples > 0 && !(options.subset < 1);
    if (draws_only || dataset_size <= most) {
        // distributed pads the epoch to a multiple of the world size.
        if (options.pattern == Pattern::distributed && dataset_size + options.world - 1 > most)
            throw PatternError(
                fmt::format("--world {}: the padded epoch of a {}-sample dataset exceeds {}",
                            options.world, dataset_size, limit));
        return;
    }
    throw PatternError(fmt::format(
        "the dataset has {} samples: --pattern {} lists every one of them each epoch, {}; "
        "use --pattern random --num-samples N or --pattern windows",
        dataset_size, to_string(options.pattern), limit));
}

} // namespace

std::optional<Pattern> parse_pattern(std::string_view name) {
    for (Pattern pattern :
         {Pattern::sequential, Pattern::shuffle, Pattern::random, Pattern::distributed,
          Pattern::shards, Pattern::zipf, Pattern::windows, Pattern::trace})
        if (name == to_string(pattern)) return pattern;
    return std::nullopt;
}

const char* to_string(Pattern pattern) {
    switch (pattern) {
    case Pattern::sequential:
        return "sequential";
    case Pattern::shuffle:
        return "shuffle";
    case Pattern::random:
        return "random";
    case Pattern::distributed:
        return "distributed";
    case Pattern::shards:
        return "shards";
    case Pattern::zipf:
        return "zipf";
    case Pattern::windows:
        return "windows";
    case Pattern::trace:
        return "trace";
    }
    return "unknown";
}

void validate(const PatternOptions& options, std::int64_t dataset_size) {
    if (dataset_size < 1)
        throw PatternError(
            fmt::format("the dataset has {} samples: a pattern needs at least 1", dataset_size));
    if (options.batch < 1)
        throw PatternError(
            fmt::format("--batch {}: needs a batch size of at least 1", options.batch));
    if (options.workers < 0)
        throw PatternError(fmt::format(
            "--workers {}: needs 0 (the main process loads) or more workers", options.workers));
    if (options.world < 1)
        throw PatternError(fmt::format("--world {}: needs at least 1 rank", options.world));
    if (options.rank < 0 || options.rank >= options.world)
        throw PatternError(fmt::format("--rank {}: needs 0 <= rank < {} (--world {})", options.rank,
                                       options.world, options.world));
    if (options.num_samples < 0)
        throw PatternError(fmt::format("--num-samples {}: needs 0 (the default count) or more",
                                       options.num_samples));
    if (options.shard_size < 0)
        throw PatternError(
            fmt::format("--shard-size {}: needs 1 or more records per shard (0 = {})",
                        options.shard_size, default_shard_size));
    if (!(options.zipf_s > 0) || !std::isfinite(options.zipf_s))
        throw PatternError(fmt::format("--zipf-s {}: needs a finite exponent > 0", options.zipf_s));
    if (!(options.subset > 0 && options.subset <= 1))
        throw PatternError(fmt::format("--subset {}: needs a fraction in (0, 1]", options.subset));
    if (options.subset < 1 && !takes_subset(options.pattern))
        throw PatternError(fmt::format(
            "--subset {}: --pattern {} does not take a subset (random_split is for map-style "
            "samplers: sequential, shuffle, random, distributed, zipf)",
            options.subset, to_string(options.pattern)));
    if (options.pattern == Pattern::windows &&
        (options.window < 1 || options.window > dataset_size))
        throw PatternError(fmt::format("--window {}: windows needs --window N with 1 <= N <= {}",
                                       options.window, dataset_size));
    check_epoch_size(options, dataset_size);
    if (options.pattern == Pattern::trace) {
        if (options.trace.empty())
            throw PatternError("--trace: the trace has no indices; trace needs at least one");
        for (std::int64_t index : options.trace)
            if (index < 0 || index >= dataset_size)
                throw PatternError("--trace: " +
                                   index_out_of_range(std::to_string(index), dataset_size));
    }
}

std::vector<std::int64_t> subset_indices(std::int64_t dataset_size, double fraction,
                                         std::uint64_t seed) {
    if (dataset_size < 1)
        throw PatternError(
            fmt::format("the dataset has {} samples: a subset needs at least 1", dataset_size));
    if (!(fraction > 0 && fraction <= 1))
        throw PatternError(fmt::format("--subset {}: needs a fraction in (0, 1]", fraction));
    Generator generator(seed, Purpose::subset);
    std::vector<std::int64_t> indices = permutation(dataset_size, generator);
    // floor(fraction * n), forgiving the rounding of decimal fractions: 0.29 * 100 evaluates to
    // 28.999999999999996, yet the user asked for 29 samples (and PyTorch's random_split keeps 29).
    const double wanted = fraction * static_cast<double>(dataset_size);
    const auto kept = static_cast<std::int64_t>(std::floor(wanted * (1 + 1e-12)));
    indices.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(kept, 1, dataset_size)));
    return indices;
}

std::vector<Sample> epoch_samples(const PatternOptions& options, std::int64_t dataset_size,
                                  int epoch) {
    validate(options, dataset_size);
    std::vector<Sample> samples;
    switch (options.pattern) {
    case Pattern::shards: // the whole epoch as one stream: the shard order, each shard in order
        return shard_streams(options, dataset_size, epoch, 1).front();
    case Pattern::windows: { // nanoGPT get_batch: random spans of `window` consecutive records
        Generator generator(options.seed, Purpose::windows, epoch);
        const std::int64_t starts = dataset_size - options.window + 1;
        samples.resize(
            static_cast<std::size_t>(draws_or(options.num_samples, dataset_size / options.window)));
        for (auto& sample : samples)
            sample = {generator.below(starts), options.window};
        return samples;
    }
    case Pattern::trace:
        samples.reserve(options.trace.size());
        for (std::int64_t index : options.trace)
            samples.push_back({index, 1});
        return samples;
    default:
        break;
    }
    // Map-style samplers run over the random_split subset (when there is one) and yield positions
    // in it, which the Subset turns into dataset indices.
    const bool whole = options.subset >= 1;
    const std::vector<std::int64_t> subset =
        whole ? std::vector<std::int64_t>{}
              : subset_indices(dataset_size, options.subset, options.seed);
    const std::int64_t m = whole ? dataset_size : static_cast<std::int64_t>(subset.size());
    const std::vector<std::int64_t> positions = sampler_positions(options, m, epoch);
    samples.reserve(positions.size());
    for (std::int64_t position : positions)
        samples.push_back({whole ? position : subset[static_cast<std::size_t>(position)], 1});
    return samples;
}

std::vector<Batch> epoch_batches(const PatternOptions& options, std::int64_t dataset_size,
                                 int epoch) {
    std::vector<Batch> batches;
    if (options.pattern != Pattern::shards) {
        // Map-style: the main process cuts the sampler's sequence into batches and hands them
        // to the workers in turn.
        auto samples =
            chunks(epoch_samples(options, dataset_size, epoch), options.batch, options.drop_last);
        for (auto& batch_samples : samples) {
            const auto number = static_cast<std::int64_t>(batches.size());
            const int worker =
                options.workers > 0 ? static_cast<int>(number % options.workers) : -1;
            batches.push_back({number, worker, std::move(batch_samples)});
        }
        return batches;
    }
    // Iterable-style: each worker batches its own stream (so drop_last cuts per worker), and the
    // main process takes one batch from each worker that still has some, in worker order.
    validate(options, dataset_size);
    const int streams = std::max(options.workers, 1);
    std::vector<std::vector<std::vector<Sample>>> per_worker;
    for (const auto& stream : shard_streams(options, dataset_size, epoch, streams))
        per_worker.push_back(chunks(stream, options.batch, options.drop_last));
    for (std::size_t round = 0;; ++round) {
        bool any = false;
        for (std::size_t worker = 0; worker < per_worker.size(); ++worker) {
            if (round >= per_worker[worker].size()) continue;
            any = true;
            batches.push_back({static_cast<std::int64_t>(batches.size()),
                               options.workers > 0 ? static_cast<int>(worker) : -1,
                               std::move(per_worker[worker][round])});
        }
        if (!any) return batches;
    }
}

} // namespace loaderlens::probes
