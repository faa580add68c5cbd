// SPDX-License-Identifier: MIT
// Time series export of a recording (docs/outputs.md, "Formats for tools").
//  - CSV, one row per figure ("long" form, ready for a pivot in pandas or R):
//      t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib,unix_ns
//    an unavailable figure has an empty value_kib; unix_ns = the recording's start_unix_ns + t_ms
//    (empty without a start). Columns are only ever appended.
//    Residency totals are rows too (source cachestat/mincore/pagemap, object = the file).
//  - Residency CSV, one row per bucket of each residency sample (a heatmap: offset x time):
//      t_s,file,series,process_id,pid,role,slot,generation,bucket,first_byte,bytes,pages,unix_ns
//    series: cached / evicted (page cache, no process) or present (one process's mappings).
//  - JSON: {format_version, started_unix_ns, meta, parts (merged), processes, objects,
//    series:{fast, rollup, maps, cgroup, system}, residency:{files, cache, mapped} with the
//    bucket vectors, tree, schedulers, markers}; docs/schema/export.schema.json.
#pragma once

#include "loaderlens/recording.hpp"

#include <ostream>

namespace loaderlens {

void export_csv(const Recording& recording, std::ostream& out);
void export_residency_csv(const Recording& recording, std::ostream& out);
void export_json(const Recording& recording, std::ostream& out);

} // namespace loaderlens
