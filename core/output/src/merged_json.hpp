// SPDX-License-Identifier: MIT
// The "merged" key of `report --json` for a merged recording (docs/report-json.md).
#pragma once

#include "loaderlens/merged_report.hpp"

#include <nlohmann/json.hpp>

namespace loaderlens::json_util {

nlohmann::json merged_json(const MergedReport& merged);

} // namespace loaderlens::json_util
