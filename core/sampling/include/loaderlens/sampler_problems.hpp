// SPDX-License-Identifier: MIT
// What a sampler could not read (one Unavailability per process, tier and reason).
#pragma once

#include "loaderlens/types.hpp"

#include <string>
#include <vector>

namespace loaderlens {

// What a sampler could not read this run, to be recorded once per change.
using Problems = std::vector<Unavailability>;

// A readable reason for errno `error` when reading `what` of a process.
std::string unavailable_reason(const std::string& what, int error);

} // namespace loaderlens
