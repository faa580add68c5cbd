// SPDX-License-Identifier: MIT
// Access patterns: index sequences, batching and worker assignment of the reference loader. All
// pure functions, so these tests check the sampler properties directly (no processes).
#include "loaderlens/probes/patterns.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

using namespace loaderlens::probes;
using loaderlens::test::TempDir;

namespace {

PatternOptions with(Pattern pattern, std::uint64_t seed = 7) {
    PatternOptions options;
    options.pattern = pattern;
    options.seed = seed;
    return options;
}

std::vector<std::int64_t> indices_of(const std::vector<Sample>& samples) {
    std::vector<std::int64_t> indices;
    for (const auto& sample : samples)
        indices.push_back(sample.index);
    return indices;
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> values) {
    std::sort(values.begin(), values.end());
    return values;
}

std::vector<std::int64_t> iota(std::int64_t n) {
    std::vector<std::int64_t> values(static_cast<std::size_t>(n));
    std::iota(values.begin(), values.end(), std::int64_t{0});
    return values;
}

// The message of the PatternError that `call` throws ("" if it throws none).
template <typename Call> std::string error_of(Call call) {
    try {
        call();
    } catch (const PatternError& error) {
        return error.what();
    }
    return "";
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

} // namespace

BOOST_AUTO_TEST_SUITE(patterns)

BOOST_AUTO_TEST_CASE(names_round_trip) {
    for (const char* name :
         {"sequential", "shuffle", "random", "distributed", "shards", "zipf", "windows", "trace"}) {
        const auto pattern = parse_pattern(name);
        BOOST_REQUIRE(pattern.has_value());
        BOOST_TEST(std::string(to_string(*pattern)) == name);
    }
    BOOST_TEST(!parse_pattern("Shuffle").has_value());
    BOOST_TEST(!parse_pattern("").has_value());
}

BOOST_AUTO_TEST_CASE(sequential_is_the_dataset_in_order) {
    const auto samples = epoch_samples(with(Pattern::sequential), 10, 3);
    BOOST_TEST(indices_of(samples) == iota(10), boost::test_tools::per_element());
    for (const auto& sample : samples)
        BOOST_TEST(sample.count == 1);
}

BOOST_AUTO_TEST_CASE(shuffle_is_a_new_permutation_each_epoch_and_reproducible) {
    const auto options = with(Pattern::shuffle);
    std::set<std::vector<std::int64_t>> orders;
    for (int epoch = 0; epoch < 5; ++epoch) {
        const auto order = indices_of(epoch_samples(options, 100, epoch));
        BOOST_TEST(sorted(order) == iota(100), boost::test_tools::per_element());
        BOOST_TEST(order != iota(100));
        orders.insert(order);
        // Same (seed, epoch): the same sequence again.
        BOOST_TEST(indices_of(epoch_samples(options, 100, epoch)) == order,
                   boost::test_tools::per_element());
    }
    BOOST_TEST(orders.size() == 5u);
    BOOST_TEST(indices_of(epoch_samples(with(Pattern::shuffle, 8), 100, 0)) !=
               indices_of(epoch_samples(options, 100, 0)));
}

BOOST_AUTO_TEST_CASE(shuffle_is_unbiased_enough) {
    // Over many epochs every index lands at position 0 about equally often (a biased shuffle,
    // e.g. swapping with any position, fails this quickly on a small n).
    const auto options = with(Pattern::shuffle);
    std::vector<int> first(5);
    for (int epoch = 0; epoch < 5000; ++epoch)
        ++first[static_cast<std::size_t>(epoch_samples(options, 5, epoch).front().index)];
    for (int count : first)
        BOOST_TEST((count > 850 && count < 1150), "count " << count);
}

BOOST_AUTO_TEST_CASE(random_draws_with_replacement) {
    auto options = with(Pattern::random);
    const auto default_count = epoch_samples(options, 50, 0);
    BOOST_TEST(default_count.size() == 50u);
    options.num_samples = 1000;
    const auto samples = epoch_samples(options, 50, 0);
    BOOST_TEST(samples.size() == 1000u);
    for (const auto& sample : samples)
        BOOST_TEST((sample.index >= 0 && sample.index < 50));
    // With replacement: 1000 draws from 50 repeat indices, and hit every one of them.
    const auto drawn = indices_of(samples);
    BOOST_TEST(std::set<std::int64_t>(drawn.begin(), drawn.end()).size() == 50u);
    BOOST_TEST(indices_of(epoch_samples(options, 50, 1)) != indices_of(samples));
    BOOST_TEST(indices_of(epoch_samples(options, 50, 0)) == indices_of(samples),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(distributed_ranks_cover_the_epoch_with_padding) {
    for (const auto& [n, world] : {std::pair{10, 3}, {12, 4}, {2, 5}, {101, 8}}) {
        BOOST_TEST_CONTEXT("n " << n << ", world " << world) {
            const std::int64_t per_rank = (n + world - 1) / world;
            std::vector<std::vector<std::int64_t>> shares;
            for (int rank = 0; rank < world; ++rank) {
                auto options = with(Pattern::distributed);
                options.rank = rank;
                options.world = world;
                shares.push_back(indices_of(epoch_samples(options, n, 2)));
                BOOST_TEST(static_cast<std::int64_t>(shares.back().size()) == per_rank);
            }
            // Interleave the shares back into the padded epoch: rank r holds positions r::world.
            std::vector<std::int64_t> padded;
            for (std::int64_t i = 0; i < per_rank; ++i)
                for (const auto& share : shares)
                    padded.push_back(share[static_cast<std::size_t>(i)]);
            const std::vector<std::int64_t> epoch(padded.begin(), padded.begin() + n);
            BOOST_TEST(sorted(epoch) == iota(n), boost::test_tools::per_element());
            // The padding repeats the epoch from its start, so the ranks overlap only there.
            for (std::size_t i = static_cast<std::size_t>(n); i < padded.size(); ++i)
                BOOST_TEST(padded[i] ==
                           epoch[(i - static_cast<std::size_t>(n)) % static_cast<std::size_t>(n)]);
        }
    }
}

BOOST_AUTO_TEST_CASE(distributed_reshuffles_per_epoch) {
    auto options = with(Pattern::distributed);
    options.world = 2;
    BOOST_TEST(indices_of(epoch_samples(options, 100, 0)) !=
               indices_of(epoch_samples(options, 100, 1)));
    BOOST_TEST(indices_of(epoch_samples(options, 100, 1)) ==
                   indices_of(epoch_samples(options, 100, 1)),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(shards_read_each_shard_once_per_epoch_on_its_worker) {
    auto options = with(Pattern::shards);
    options.shard_size = 10;
    options.batch = 4;
    const std::int64_t n = 95; // 10 shards, the last one 5 records long
    std::vector<std::vector<std::int64_t>> shard_orders;
    for (int workers : {0, 1, 3, 4}) {
        options.workers = workers;
        BOOST_TEST_CONTEXT("workers " << workers) {
            const auto batches = epoch_batches(options, n, 1);
            std::map<int, std::vector<std::int64_t>> stream_of_worker;
            for (std::size_t k = 0; k < batches.size(); ++k) {
                BOOST_TEST(batches[k].number == static_cast<std::int64_t>(k));
                BOOST_TEST((workers == 0 ? batches[k].worker == -1
                                         : batches[k].worker >= 0 && batches[k].worker < workers));
                BOOST_TEST(batches[k].samples.size() <= 4u);
                for (const auto& sample : batches[k].samples)
                    stream_of_worker[batches[k].worker].push_back(sample.index);
            }
            std::vector<std::int64_t> all;
            std::vector<std::int64_t> order; // shards in the order they were started, over workers
            for (auto& [worker, stream] : stream_of_worker) {
                // A worker's stream is its shards back to back, each contiguous from its start.
                std::vector<std::int64_t> mine;
                for (std::size_t i = 0; i < stream.size(); ++i) {
                    if (i > 0 && stream[i] == stream[i - 1] + 1 && stream[i] % 10 != 0) continue;
                    BOOST_TEST(stream[i] % 10 == 0);
                    mine.push_back(stream[i] / 10);
                }
                all.insert(all.end(), stream.begin(), stream.end());
                // Worker w reads the shards w, w + W, ... of the epoch's order.
                for (std::size_t j = 0; j < mine.size(); ++j) {
                    const std::size_t slot = j * static_cast<std::size_t>(std::max(workers, 1)) +
                                             static_cast<std::size_t>(std::max(worker, 0));
                    if (order.size() <= slot) order.resize(slot + 1, -1);
                    order[slot] = mine[j];
                }
            }
            BOOST_TEST(sorted(all) == iota(n), boost::test_tools::per_element());
            BOOST_TEST(sorted(order) == iota(10), boost::test_tools::per_element());
            shard_orders.push_back(order);
        }
    }
    // The shard order is the epoch's, whatever the number of workers.
    for (const auto& order : shard_orders)
        BOOST_TEST(order == shard_orders.front(), boost::test_tools::per_element());
    // epoch_samples is that order read front to back.
    std::vector<std::int64_t> expected;
    for (std::int64_t shard : shard_orders.front())
        for (std::int64_t i = shard * 10; i < std::min(n, shard * 10 + 10); ++i)
            expected.push_back(i);
    BOOST_TEST(indices_of(epoch_samples(options, n, 1)) == expected,
               boost::test_tools::per_element());
    BOOST_TEST(indices_of(epoch_samples(options, n, 2)) != expected);
}

BOOST_AUTO_TEST_CASE(shards_batch_per_worker_and_interleave_round_robin) {
    auto options = with(Pattern::shards);
    options.shard_size = 10;
    options.batch = 4;
    options.workers = 3;
    // 4 shards of 10: worker 0 gets two (20 records: 5 batches), workers 1 and 2 one each
    // (10 records: 2 full batches + a short one, which drop_last drops per worker).
    auto batches = epoch_batches(options, 40, 0);
    std::vector<int> workers;
    for (const auto& batch : batches)
        workers.push_back(batch.worker);
    BOOST_TEST(workers == (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0}),
               boost::test_tools::per_element());
    BOOST_TEST(batches[6].samples.size() == 4u);
    BOOST_TEST(batches[7].samples.size() == 2u);
    BOOST_TEST(batches[8].samples.size() == 2u);

    options.drop_last = true;
    batches = epoch_batches(options, 40, 0);
    workers.clear();
    for (const auto& batch : batches) {
        workers.push_back(batch.worker);
        BOOST_TEST(batch.samples.size() == 4u);
    }
    BOOST_TEST(workers == (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 0, 0}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(shards_default_size_and_short_dataset) {
    auto options = with(Pattern::shards);
    options.batch = 1000;
    const auto batches = epoch_batches(options, 3000, 0); // shards of 1024, 1024, 952
    std::int64_t total = 0;
    for (const auto& batch : batches)
        total += static_cast<std::int64_t>(batch.samples.size());
    BOOST_TEST(total == 3000);
    BOOST_TEST(epoch_samples(options, 3000, 0).front().index % 1024 == 0);
}

BOOST_AUTO_TEST_CASE(zipf_has_a_fixed_hot_set) {
    auto options = with(Pattern::zipf);
    options.num_samples = 20000;
    std::vector<std::int64_t> hottest;
    for (int epoch = 0; epoch < 3; ++epoch) {
        const auto samples = epoch_samples(options, 1000, epoch);
        BOOST_TEST(samples.size() == 20000u);
        std::vector<std::int64_t> counts(1000);
        for (const auto& sample : samples) {
            BOOST_REQUIRE((sample.index >= 0 && sample.index < 1000));
            ++counts[static_cast<std::size_t>(sample.index)];
        }
        const auto top = std::max_element(counts.begin(), counts.end());
        hottest.push_back(top - counts.begin());
        std::vector<std::int64_t> by_count = sorted(counts);
        const std::int64_t median = by_count[500];
        BOOST_TEST(*top > 50 * std::max<std::int64_t>(median, 1));
    }
    // The same sample is hottest every epoch, and it is not simply the first record.
    BOOST_TEST(hottest[0] == hottest[1]);
    BOOST_TEST(hottest[1] == hottest[2]);
    BOOST_TEST(hottest[0] != 0);
    options.num_samples = 0;
    BOOST_TEST(epoch_samples(options, 1000, 0).size() == 1000u);
    BOOST_TEST(indices_of(epoch_samples(options, 1000, 0)) !=
               indices_of(epoch_samples(options, 1000, 1)));
}

BOOST_AUTO_TEST_CASE(windows_stay_inside_the_dataset) {
    auto options = with(Pattern::windows);
    options.window = 64;
    const auto samples = epoch_samples(options, 1000, 0);
    BOOST_TEST(samples.size() == 1000u / 64u);
    options.num_samples = 5000;
    bool saw_last_start = false;
    for (const auto& sample : epoch_samples(options, 1000, 0)) {
        BOOST_TEST(sample.count == 64);
        BOOST_TEST((sample.index >= 0 && sample.index + sample.count <= 1000));
        saw_last_start |= sample.index == 1000 - 64;
    }
    BOOST_TEST(saw_last_start); // the inclusive upper bound is reachable
    options.window = 1000;      // window == dataset: the only span is the whole of it
    for (const auto& sample : epoch_samples(options, 1000, 1))
        BOOST_TEST(sample.index == 0);
}

BOOST_AUTO_TEST_CASE(trace_replays_identically) {
    auto options = with(Pattern::trace);
    options.trace = {5, 5, 0, 9, 3};
    options.batch = 2;
    for (int epoch = 0; epoch < 3; ++epoch)
        BOOST_TEST(indices_of(epoch_samples(options, 10, epoch)) == options.trace,
                   boost::test_tools::per_element());
    BOOST_TEST(epoch_batches(options, 10, 0).size() == 3u);
}

BOOST_AUTO_TEST_CASE(read_trace_accepts_indices_comments_and_blanks) {
    TempDir dir;
    const auto path = dir.file("trace.txt");
    write_file(path, "# recorded from run 12\n3\n  7  \n\n\t# note\n0\r\n99");
    BOOST_TEST(read_trace(path, 100) == (std::vector<std::int64_t>{3, 7, 0, 99}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(read_trace_errors_name_file_and_line) {
    TempDir dir;
    const auto path = dir.file("trace.txt");
    write_file(path, "1\n2\n\n123\n");
    BOOST_TEST(error_of([&] { read_trace(path, 100); }) ==
               path + ":4: index 123 is out of range: the dataset has 100 samples");
    write_file(path, "1\n-1\n");
    BOOST_TEST(error_of([&] { read_trace(path, 100); }) ==
               path + ":2: index -1 is out of range: the dataset has 100 samples");
    write_file(path, "1\n99999999999999999999999\n");
    BOOST_TEST(error_of([&] { read_trace(path, 100); }) ==
               path + ":2: index 99999999999999999999999 is out of range: the dataset has 100 "
                      "samples");
    for (const char* garbage : {"12abc", "1 2", "one", "1.5", "+3"}) {
        write_file(path, std::string("0\n") + garbage + "\n");
        BOOST_TEST(error_of([&] { read_trace(path, 100); }) ==
                   path + ":2: '" + garbage + "' is not a sample index");
    }
    const auto missing = dir.file("missing.txt");
    BOOST_TEST(error_of([&] { read_trace(missing, 100); }) ==
               missing + ": cannot read: No such file or directory");
    BOOST_TEST(error_of([&] { read_trace(dir.path().string(), 100); }) ==
               dir.path().string() + ": cannot read: Is a directory");
}

BOOST_AUTO_TEST_CASE(subset_is_a_stable_seeded_part_of_the_dataset) {
    const auto subset = subset_indices(1000, 0.25, 3);
    BOOST_TEST(subset.size() == 250u);
    BOOST_TEST(std::set<std::int64_t>(subset.begin(), subset.end()).size() == 250u);
    for (std::int64_t index : subset)
        BOOST_TEST((index >= 0 && index < 1000));
    BOOST_TEST(subset_indices(1000, 0.25, 3) == subset, boost::test_tools::per_element());
    BOOST_TEST(subset_indices(1000, 0.25, 4) != subset);
    BOOST_TEST(subset_indices(100, 0.29, 3).size() == 29u); // not 28 from 28.999999999999996
    BOOST_TEST(subset_indices(10, 0.01, 3).size() == 1u);   // at least one sample
    BOOST_TEST(subset_indices(10, 1.0, 3).size() == 10u);

    const std::set<std::int64_t> members(subset.begin(), subset.end());
    for (Pattern pattern : {Pattern::sequential, Pattern::shuffle, Pattern::random,
                            Pattern::distributed, Pattern::zipf}) {
        auto options = with(pattern, 3);
        options.subset = 0.25;
        options.world = 2;
        BOOST_TEST_CONTEXT(to_string(pattern)) {
            for (int epoch = 0; epoch < 3; ++epoch) {
                const auto indices = indices_of(epoch_samples(options, 1000, epoch));
                for (std::int64_t index : indices)
                    BOOST_TEST(members.count(index) == 1u);
                if (pattern == Pattern::shuffle || pattern == Pattern::sequential)
                    BOOST_TEST(sorted(indices) == sorted(subset), boost::test_tools::per_element());
                if (pattern == Pattern::random || pattern == Pattern::zipf)
                    BOOST_TEST(indices.size() == 250u);
                if (pattern == Pattern::distributed) BOOST_TEST(indices.size() == 125u);
            }
        }
    }
    // Sequential over a Subset visits it in the subset's (random_split) order.
    auto options = with(Pattern::sequential, 3);
    options.subset = 0.25;
    BOOST_TEST(indices_of(epoch_samples(options, 1000, 5)) == subset,
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(map_style_batches_and_worker_assignment) {
    auto options = with(Pattern::sequential);
    options.batch = 4;
    for (int workers : {0, 1, 2, 3, 5}) {
        options.workers = workers;
        BOOST_TEST_CONTEXT("workers " << workers) {
            options.drop_last = false;
            auto batches = epoch_batches(options, 10, 0);
            BOOST_REQUIRE(batches.size() == 3u);
            for (std::size_t k = 0; k < batches.size(); ++k) {
                BOOST_TEST(batches[k].number == static_cast<std::int64_t>(k));
                BOOST_TEST(batches[k].worker ==
                           (workers == 0 ? -1 : static_cast<int>(k) % workers));
                BOOST_TEST(batches[k].samples.front().index == static_cast<std::int64_t>(4 * k));
            }
            BOOST_TEST(batches[0].samples.size() == 4u);
            BOOST_TEST(batches[2].samples.size() == 2u);
            options.drop_last = true;
            batches = epoch_batches(options, 10, 0);
            BOOST_TEST(batches.size() == 2u);
            options.drop_last = false;
            BOOST_TEST(epoch_batches(options, 8, 0).size() == 2u); // exact multiple: no short one
        }
    }
    options.batch = 20;
    options.drop_last = true;
    BOOST_TEST(epoch_batches(options, 10, 0).empty());
}

BOOST_AUTO_TEST_CASE(validate_names_the_option) {
    const auto message = [](PatternOptions options, std::int64_t n = 1000) {
        return error_of([&] { validate(options, n); });
    };
    BOOST_TEST(message(with(Pattern::shuffle)) == "");
    auto options = with(Pattern::shuffle);
    BOOST_TEST(message(options, 0) == "the dataset has 0 samples: a pattern needs at least 1");
    options.batch = 0;
    BOOST_TEST(message(options) == "--batch 0: needs a batch size of at least 1");
    options = with(Pattern::shuffle);
    options.workers = -1;
    BOOST_TEST(message(options) ==
               "--workers -1: needs 0 (the main process loads) or more workers");
    options = with(Pattern::distributed);
    options.world = 0;
    BOOST_TEST(message(options) == "--world 0: needs at least 1 rank");
    options.world = 2;
    options.rank = 2;
    BOOST_TEST(message(options) == "--rank 2: needs 0 <= rank < 2 (--world 2)");
    options.rank = -1;
    BOOST_TEST(message(options).starts_with("--rank -1:"));
    options = with(Pattern::windows);
    BOOST_TEST(message(options) == "--window 0: windows needs --window N with 1 <= N <= 1000");
    options.window = 1001;
    BOOST_TEST(message(options).starts_with("--window 1001:"));
    options = with(Pattern::shards);
    options.shard_size = -5;
    BOOST_TEST(message(options).starts_with("--shard-size -5:"));
    options = with(Pattern::zipf);
    options.zipf_s = 0;
    BOOST_TEST(message(options) == "--zipf-s 0: needs a finite exponent > 0");
    options = with(Pattern::random);
    options.num_samples = -1;
    BOOST_TEST(message(options).starts_with("--num-samples -1:"));
    for (double subset : {0.0, -0.5, 1.5}) {
        options = with(Pattern::shuffle);
        options.subset = subset;
        BOOST_TEST(message(options).starts_with("--subset "));
        BOOST_TEST(message(options).ends_with(": needs a fraction in (0, 1]"));
    }
    for (Pattern pattern : {Pattern::windows, Pattern::shards, Pattern::trace}) {
        options = with(pattern);
        options.window = 10;
        options.trace = {1};
        options.subset = 0.5;
        BOOST_TEST(message(options).starts_with(std::string("--subset 0.5: --pattern ") +
                                                to_string(pattern) + " does not take a subset"));
    }
    options = with(Pattern::trace);
    BOOST_TEST(message(options).starts_with("--trace: the trace has no indices"));
    options.trace = {1, 1000};
    BOOST_TEST(message(options) ==
               "--trace: index 1000 is out of range: the dataset has 1000 samples");
    // Every message is one line.
    options.trace = {};
    BOOST_TEST(message(options).find('\n') == std::string::npos);
    // The sequence functions check too, rather than dividing by zero.
    options = with(Pattern::shuffle);
    options.batch = 0;
    BOOST_CHECK_THROW(epoch_batches(options, 10, 0), PatternError);
}

BOOST_AUTO_TEST_SUITE_END()
