// SPDX-License-Identifier: MIT
// The tests' own reader of Prometheus expositions (text format 0.0.4 and OpenMetrics 1.0), written
// from the formats' specifications, not from loaderlens's writer: a sample line's name, labels
// (escapes undone), value and timestamp, and what makes a file unreadable to node_exporter or
// Prometheus (a sample before its family's TYPE and HELP, interleaved families, a duplicate
// series, a missing final newline or # EOF, a timestamp in a textfile).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens::test {

struct ExpositionSample {
    std::string name;
    std::map<std::string, std::string> labels;
    std::string value;
    std::optional<std::string> timestamp;
};

struct Exposition {
    std::vector<ExpositionSample> samples;
    std::map<std::string, std::string> help, type, unit;
    std::string error; // empty: well-formed; else the first problem, with its line
    // The samples of `name` whose labels hold every pair of `match`.
    std::vector<const ExpositionSample*>
    find(const std::string& name, const std::map<std::string, std::string>& match = {}) const;
    // The value of the one sample of `name` matching `match`, as a number; nothing when there is
    // none (more than one fails the test).
    std::optional<long double> value(const std::string& name,
                                     const std::map<std::string, std::string>& match = {}) const;
};

Exposition parse_exposition(const std::string& text, bool openmetrics);

// `promtool check metrics` on `file` (it reads standard input only).
struct PromtoolResult {
    int exit_code = -1;
    std::string out, err;
};
PromtoolResult promtool_check(const std::string& file);

} // namespace loaderlens::test
