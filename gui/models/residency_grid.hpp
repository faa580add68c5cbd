// SPDX-License-Identifier: MIT
// The Residency view's heatmaps: a followed file's offset (rows: the recording's buckets) against
// time (columns of equal width), each cell the share of the bucket's pages present at the last
// residency sample at or before the column's end: in the page cache, evicted (cachestat only),
// or mapped and present in a worker slot (its generations summed). Before a file's first sample a
// cell is NaN (not sampled), never 0.
#pragma once

#include "envelope.hpp"
#include "loaderlens/recording_data.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace loaderlens::gui {

struct ResidencyGrid {
    int columns = 0, rows = 0;
    double from_s = 0, to_s = 0;
    std::vector<float> cells; // column-major: cells[column * rows + row]
    float at(int column, int row) const {
        return cells[static_cast<std::size_t>(column) * rows + row];
    }
};

struct FileResidencyGrids {
    ResidencyFile file;
    ResidencyGrid cache;
    std::optional<ResidencyGrid> evicted;                  // cachestat only
    std::vector<std::pair<int, ResidencyGrid>> slot_grids; // worker slot -> present pages
    std::vector<PlotPoint> read_progress;                  // t, MiB read at least once (replay)
    std::vector<PlotPoint> cached_mib;                     // t, the file's page cache (MiB)
};

// The grids of one file over [0, duration_ms], at most `max_columns` wide. `loader_file`: the
// reference loader's dataset, whose read progress is drawn over the cache.
FileResidencyGrids residency_grids(const RecordingData& data, std::int64_t file_id,
                                   const std::map<std::int64_t, ProcessInfo>& processes,
                                   std::int64_t duration_ms, int max_columns, bool loader_file);

} // namespace loaderlens::gui
