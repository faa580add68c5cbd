// SPDX-License-Identifier: MIT
// Residency as JSON, shared by the report (summaries) and the export (bucket series).
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"

#include <nlohmann/json.hpp>

namespace loaderlens::json_util {

nlohmann::json residency_file(const ResidencyFile& file);
nlohmann::json residency_summary(const FileResidencySummary& summary);
// {files, cache: [{t_ms, file_id, ..., buckets}], mapped: [{t_ms, file_id, process_id, ...}]}
nlohmann::json residency_series(const RecordingData& data);

} // namespace loaderlens::json_util
