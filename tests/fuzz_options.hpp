// SPDX-License-Identifier: MIT
// Hostile option values for every numeric and path option of every subcommand, for the fuzz suite:
// each (option, value) one case, run on good inputs, plus the output-path attacks (an output that
// is an input, a device, a FIFO, sidecars planted as symlinks) and a closed stdout.
#pragma once

#include "fuzz_option_values.hpp"
#include "fuzz_runner.hpp"

#include <string>
#include <vector>

namespace loaderlens::test {

struct OptionInputs {
    std::string npy, raw, lmdb, recording; // good inputs
    std::string raw_record_size;           // --record-size of `raw`
};

// The ways an error line may write `value` (as is, escaped in each common style, its printable
// end): the oracle accepts an error line that holds any of them as naming the value.
std::vector<std::string> name_forms(const std::string& value);

class HostileOptions {
  public:
    // Outputs of the cases and their special files (FIFO, device nodes when root, symlinks, ...)
    // go under `dir`/out.
    HostileOptions(OptionInputs inputs, std::string dir);

    // Every option with every value of its catalogue, and the output attacks; under ASan
    // (fuzz_sanitized) every other case of the catalogue, and no value that asks for gigabytes.
    std::vector<FuzzCase> sweep(std::uint64_t seed) const;
    // `count` cases of random values (never a PID: a random one may be a live process).
    std::vector<FuzzCase> random_cases(std::uint64_t seed, std::size_t first_index,
                                       std::size_t count) const;

    struct Spec {
        std::string command; // record, record -f, replay, load, load-raw, load-lmdb, mkdata npy,
                             // mkdata raw, mkdata lmdb, report, report --json, export, export -o,
                             // tail, advise
        std::string flag;    // "" for the positional (file, dataset, path)
        ValueKind kind;
        std::vector<std::string> context; // what makes the option matter (--pattern ...)
        bool long_runs = false;           // large values legitimately take long (see random_value)
    };

  private:
    FuzzCase make_case(const Spec& spec, const HostileValue& value, std::uint64_t seed,
                       std::size_t index) const;
    std::vector<std::string> argv_for(const Spec& spec, const std::string& value,
                                      const std::string& out) const;
    std::string good_input_link(const Spec& spec) const;
    // `text` with a catalogue path (@special/NAME...) made real under `case_dir`: the node it
    // names is created there, and added to `nodes` if no command may change it.
    std::string materialize(const std::string& text, const std::string& case_dir,
                            std::vector<std::string>& nodes) const;
    std::vector<FuzzCase> output_attacks(std::uint64_t seed, std::size_t first_index) const;

    OptionInputs inputs_;
    std::string dir_, out_dir_;
    SpecialPaths paths_;
    std::vector<Spec> specs_;
};

} // namespace loaderlens::test
