// SPDX-License-Identifier: MIT
// The diagnosis in `report --json`: schedulers, limit, recorder, epochs, growth, gap, findings
// (keys: docs/report-json.md).
#pragma once

#include "loaderlens/diagnosis.hpp"

#include <nlohmann/json.hpp>

namespace loaderlens::json_util {

// Adds the diagnosis's keys to `out` (a report object).
void add_diagnosis(nlohmann::json& out, const Diagnosis& diagnosis);

} // namespace loaderlens::json_util
