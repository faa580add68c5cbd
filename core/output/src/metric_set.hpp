// SPDX-License-Identifier: MIT
// Series of the metric families (metric_families.hpp) and their text: OpenMetrics 1.0 (the
// export) or the Prometheus text format 0.0.4 (node_exporter's textfile collector reads only
// that one: no timestamps, no # UNIT, no # EOF).
#pragma once

#include "metric_families.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace loaderlens::metrics {

enum class TextFormat { openmetrics, prometheus };

class MetricSet {
  public:
    // latest: a series holds its latest sample (a snapshot); every: each sample with its time.
    enum class Keep { latest, every };
    explicit MetricSet(Keep keep) : keep_(keep) {}

    // A sample of `family` for the series `labels`, at `unix_ms` (written with Keep::every). An
    // unavailable value (nullopt) is never written as 0: with Keep::latest it takes the series
    // out (its earlier value is not the latest any more), with Keep::every it leaves a gap.
    void add(Family family, const Labels& labels, std::optional<std::string> value,
             std::optional<std::int64_t> unix_ms = std::nullopt);

    // Families in their order, each with TYPE and HELP (and UNIT in OpenMetrics) before its
    // series; series sorted by labels, each one's samples in the order added. A family without a
    // series is left out. OpenMetrics ends with "# EOF"; both end with a newline.
    std::string render(TextFormat format) const;

  private:
    struct Point {
        std::string value;
        std::optional<std::int64_t> unix_ms;
    };
    Keep keep_;
    std::array<std::map<Labels, std::vector<Point>>, family_count> families_;
};

// A label value as both formats want it: \ " and newline escaped, bytes that are not UTF-8
// replaced by U+FFFD (Prometheus refuses a label value that is not UTF-8).
std::string escape_label_value(std::string_view text);

} // namespace loaderlens::metrics
