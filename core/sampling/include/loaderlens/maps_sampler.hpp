// SPDX-License-Identifier: MIT
// The maps tier's sampler (docs/figures.md for each figure's source).
#pragma once

#include "loaderlens/sampler_problems.hpp"
#include "loaderlens/types.hpp"

#include <string>
#include <vector>

namespace loaderlens {

// Maps tier: /proc/PID/smaps aggregated per backing file (path + inode) and per kind of anonymous
// memory. Files with less than `min_file_rss_kb` resident are folded into one "other" object per
// process so that shared libraries do not flood the recording; the totals stay exact. A file with
// a mapping that has execute permission is flagged executable (code: the diagnosis never makes a
// finding of its own about it).
class MapsSampler {
  public:
    explicit MapsSampler(std::int64_t min_file_rss_kb = 1024) : min_file_rss_kb_(min_file_rss_kb) {}
    void sample(const std::vector<ProcessInfo>& live, std::vector<MapsSample>& out,
                Problems& problems);

  private:
    std::int64_t min_file_rss_kb_;
};

// Parses the text of /proc/PID/smaps into per-object sums (exposed for fixture tests).
std::vector<MappedObject> aggregate_smaps(std::string_view text, std::int64_t min_file_rss_kb);

} // namespace loaderlens
