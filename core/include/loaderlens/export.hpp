// Time series export of a recording.
//  - CSV, one row per figure ("long" form, ready for a pivot in pandas or R):
//      t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib
//    an unavailable figure has an empty value_kib.
//  - JSON: {meta, processes, objects, series:{fast, rollup, maps, cgroup, system}, markers}.
#pragma once

#include "loaderlens/recording.hpp"

#include <ostream>

namespace loaderlens {

void export_csv(const Recording& recording, std::ostream& out);
void export_json(const Recording& recording, std::ostream& out);

} // namespace loaderlens
