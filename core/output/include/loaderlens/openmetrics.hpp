// SPDX-License-Identifier: MIT
// A recording's figures as Prometheus metrics (docs/metrics.md): one gauge family per figure, in
// bytes, labelled by node, SLURM job, step and task, role, worker slot (and pid, file, view).
//  - export_openmetrics: OpenMetrics 1.0 text ending in "# EOF". By default a snapshot: each
//    series' latest value, no timestamps (`promtool check metrics` reads it). With timestamps:
//    every tick a sample with its wall-clock time in seconds, for backfilling
//    (`promtool tsdb create-blocks-from openmetrics`).
//  - LiveMetrics (live_metrics.hpp): the latest values of a recording being written, for
//    node_exporter's textfile collector.
// A figure that is unavailable is left out, never written as 0.
#pragma once

#include "loaderlens/recording.hpp"

#include <ostream>

namespace loaderlens {

struct OpenMetricsOptions {
    bool timestamps = false;
};

// Reads the whole recording (and its diagnosis) before writing anything: a RecordingError
// (damage; with timestamps, a recording without its wall-clock start) leaves no partial output.
void export_openmetrics(const Recording& recording, std::ostream& out,
                        const OpenMetricsOptions& options = {});

} // namespace loaderlens
