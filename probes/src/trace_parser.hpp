// SPDX-License-Identifier: MIT
// What the trace reader (read_trace in patterns.hpp) shares with the pattern checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loaderlens::probes {

// "index 12 is out of range: the dataset has 10 samples"
std::string index_out_of_range(std::string_view index, std::int64_t dataset_size);

} // namespace loaderlens::probes
