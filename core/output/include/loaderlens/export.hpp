// SPDX-License-Identifier: MIT
// Time series export of a recording.
//  - CSV, one row per figure ("long" form, ready for a pivot in pandas or R):
//      t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib
//    an unavailable figure has an empty value_kib.
//    Residency totals are rows too (source cachestat/mincore/pagemap, object = the file).
//  - Residency CSV, one row per bucket of each residency sample (a heatmap: offset x time):
//      t_s,file,series,process_id,pid,role,slot,generation,bucket,first_byte,bytes,pages
//    series: cached / evicted (page cache, no process) or present (one process's mappings).
//  - JSON: {meta, processes, objects, series:{fast, rollup, maps, cgroup, system}, residency:
//    {files, cache, mapped} with the bucket vectors, markers}.
#pragma once

#include "loaderlens/recording.hpp"

#include <ostream>

namespace loaderlens {

void export_csv(const Recording& recording, std::ostream& out);
void export_residency_csv(const Recording& recording, std::ostream& out);
void export_json(const Recording& recording, std::ostream& out);

} // namespace loaderlens
