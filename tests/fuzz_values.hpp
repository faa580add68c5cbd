// SPDX-License-Identifier: MIT
// The fuzz generators' catalogues of hostile values: SQL expressions for cells, BLOBs and meta
// values of a recording, and JSON documents for the recording's JSON values.
#pragma once

#include "fuzz_random.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace loaderlens::test {

// SQL expressions.
std::vector<std::string> extreme_integers();
std::vector<std::string> wrong_type_values(const std::string& declared_type);
std::vector<std::string> blob_values(FuzzRandom& random, std::int64_t buckets);
std::vector<std::string> meta_values();
std::vector<std::string> hostile_texts();

// A JSON value (or not quite one) for the recording, with a python3 expression of the same text
// (for the reproducer) and a short description.
struct JsonValue {
    std::string text, python, description;
};
// meta loader.config: deep or huge JSON, invalid JSON, the good config with one field hostile.
JsonValue random_config_json(FuzzRandom& random, const std::string& good_config);
// loader_progress.workers (a JSON array of byte counts).
JsonValue random_workers_json(FuzzRandom& random);

// `text` cut to `length` characters, saying how long it was.
std::string shortened(const std::string& text, std::size_t length);

} // namespace loaderlens::test
