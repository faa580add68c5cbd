// SPDX-License-Identifier: MIT
// The fuzz suites' randomness: SplitMix64 (the same numbers on every machine and compiler, unlike
// the standard distributions), one generator per case derived from the run's seed and the case's
// index (a case replays alone), and the seeds of a run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens::test {

class FuzzRandom {
  public:
    explicit FuzzRandom(std::uint64_t seed) : state_(seed) {}
    // The generator of case `index` of the run seeded with `seed`.
    static FuzzRandom for_case(std::uint64_t seed, std::size_t index) {
        FuzzRandom mix(seed ^ (0x9E3779B97F4A7C15ull * (index + 1)));
        mix.next();
        return FuzzRandom(mix.next());
    }

    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // In [0, n) (0 when n is 0); the modulo bias is far below what a fuzz case cares about.
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
    // In [low, high].
    std::int64_t between(std::int64_t low, std::int64_t high) {
        return low + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(high - low) + 1));
    }
    bool percent(unsigned chance) { return below(100) < chance; }
    template <typename T> const T& pick(const std::vector<T>& items) {
        return items[static_cast<std::size_t>(below(items.size()))];
    }

  private:
    std::uint64_t state_;
};

// The seeds of this run: `fixed`, then one drawn for this run of the test binary (the same one
// for every fuzz suite in it); or only $LOADERLENS_FUZZ_SEED (decimal or 0x hex) when set.
std::vector<std::uint64_t> fuzz_seeds(const std::vector<std::uint64_t>& fixed);
// $LOADERLENS_FUZZ_CASE: run only the case with this index (of each seed).
std::optional<std::size_t> fuzz_only_case();
// $LOADERLENS_FUZZ_KEEP: a directory the failing cases' inputs are copied into.
std::optional<std::string> fuzz_keep_dir();
// "0x..." as the seeds are printed.
std::string seed_text(std::uint64_t seed);

// `text` for inside the quotes of bash's $'...' or of a Python '...' literal (the same rules): a
// quote or a backslash gets a backslash before it, a byte outside printable ASCII becomes \xNN.
std::string backslash_escaped(const std::string& text);

} // namespace loaderlens::test
