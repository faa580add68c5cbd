// SPDX-License-Identifier: MIT
// How tests/consumers_agree.cpp reads what each consumer printed (text rows, CSV rows,
// OpenMetrics lines, `check` lines) and writes the report's figures as each consumer rounds them.
#pragma once

#include "loaderlens/units.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace loaderlens::test::consumers_agree {

using nlohmann::json;

// Counts comparisons; each failed one is a failed check naming the figure and both sides.
struct Compare {
    int count = 0;
    void same(const std::string& what, const std::string& a, const std::string& b) {
        ++count;
        BOOST_CHECK_MESSAGE(a == b, what << ": '" << a << "' vs '" << b << "'");
    }
    void holds(bool ok, const std::string& what) {
        ++count;
        BOOST_CHECK_MESSAGE(ok, what);
    }
    // Each of `parts` in `line`, in this order.
    void in_order(const std::string& what, const std::string& line,
                  const std::vector<std::string>& parts) {
        ++count;
        std::size_t at = 0;
        for (const std::string& part : parts) {
            const auto found = line.find(part, at);
            BOOST_CHECK_MESSAGE(found != std::string::npos,
                                what << ": '" << part << "' not in '" << line.substr(at) << "'");
            if (found == std::string::npos) return;
            at = found + part.size();
        }
    }
    // Each of `tokens` a whole word of `line`, in this order.
    void tokens_in_order(const std::string& what, const std::string& line,
                         const std::vector<std::string>& tokens) {
        ++count;
        std::istringstream words(line);
        std::string word;
        std::size_t next = 0;
        while (next < tokens.size() && words >> word)
            if (word == tokens[next]) ++next;
        std::string expected;
        for (const auto& t : tokens)
            expected += t + " ";
        BOOST_CHECK_MESSAGE(next == tokens.size(), what << ": expected in order '" << expected
                                                        << "', missing from '"
                                                        << tokens[std::min(next, tokens.size() - 1)]
                                                        << "' in '" << line << "'");
    }
};

inline Kib kib_of(const json& v) {
    return v.is_null() ? Kib{} : Kib(v.get<std::int64_t>());
}
inline std::string size(const Kib& v) {
    return format_kib(v);
}
inline std::string size(const json& v) {
    return format_kib(kib_of(v));
}
inline std::string compact(const json& v) {
    return format_kib(kib_of(v), SizeStyle::compact);
}
inline std::string seconds(std::int64_t ms) {
    return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
}
inline std::string seconds(const json& ms) {
    return seconds(ms.get<std::int64_t>());
}
// As the report's margin: "-" and the size when negative.
inline std::string signed_size(const json& v) {
    if (v.is_null()) return "n/a";
    const std::int64_t kb = v.get<std::int64_t>();
    return kb < 0 ? "-" + format_kib(-kb) : format_kib(kb);
}
// What a scheduler view holds against its limit: limit - margin (= peak + the recorder).
inline Kib counted_kib(const json& view) {
    if (view["margin_kib"].is_null() || view["limit"]["kib"].is_null()) return {};
    return view["limit"]["kib"].get<std::int64_t>() - view["margin_kib"].get<std::int64_t>();
}
// A report peak {kib, t_ms} as the text report prints it.
inline std::string peak_text(const json& peak) {
    if (peak["kib"].is_null()) return "n/a";
    return size(peak["kib"]) + " at " + seconds(peak["t_ms"]);
}

struct TimedPeak {
    Kib kib;
    std::int64_t t_ms = 0;
    std::string text() const {
        return kib ? fmt::format("{} KiB at {} ms", *kib, t_ms) : std::string("none");
    }
};
// The first highest value of export points [{t_ms, kib, partial}].
inline TimedPeak peak_of(const json& points) {
    TimedPeak out;
    for (const json& p : points)
        if (!p["kib"].is_null() && (!out.kib || p["kib"].get<std::int64_t>() > *out.kib))
            out = {p["kib"].get<std::int64_t>(), p["t_ms"].get<std::int64_t>()};
    return out;
}
inline TimedPeak json_peak(const json& peak) {
    if (peak["kib"].is_null()) return {};
    return {peak["kib"].get<std::int64_t>(), peak["t_ms"].get<std::int64_t>()};
}
inline TimedPeak json_peak_of(const json& view) {
    if (view["peak_kib"].is_null()) return {};
    return {view["peak_kib"].get<std::int64_t>(), view["peak_ms"].get<std::int64_t>()};
}

// The first line of `lines` that starts with `prefix`.
inline std::optional<std::string> line_starting(const std::vector<std::string>& lines,
                                                const std::string& prefix) {
    for (const std::string& line : lines)
        if (line.starts_with(prefix)) return line;
    return std::nullopt;
}

struct CsvRow {
    std::int64_t t_ms = 0;
    std::string source;
    std::int64_t process_id = 0;
    std::string object, metric;
    Kib value;
};
// export --format csv: t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib
// (and columns appended after those: unix_ns)
inline std::vector<CsvRow> csv_rows(const std::vector<std::string>& lines) {
    std::vector<CsvRow> out;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        std::vector<std::string> cells(1);
        bool quoted = false;
        const std::string& line = lines[i];
        for (std::size_t k = 0; k < line.size(); ++k) {
            const char ch = line[k];
            if (quoted && ch == '"' && k + 1 < line.size() && line[k + 1] == '"') {
                cells.back() += '"';
                ++k;
            } else if (ch == '"') {
                quoted = !quoted;
            } else if (ch == ',' && !quoted) {
                cells.emplace_back();
            } else {
                cells.back() += ch;
            }
        }
        if (cells.size() < 10) continue;
        CsvRow row;
        row.t_ms = std::llround(std::stod(cells[0]) * 1000);
        row.source = cells[1];
        row.process_id = cells[2].empty() ? 0 : std::stoll(cells[2]);
        row.object = cells[7];
        row.metric = cells[8];
        if (!cells[9].empty()) row.value = std::stoll(cells[9]);
        out.push_back(std::move(row));
    }
    return out;
}

struct MetricLine {
    std::string name;
    std::map<std::string, std::string> labels;
    std::string value;
};
// OpenMetrics text: name{key="value",...} value [timestamp]; comments left out.
inline std::vector<MetricLine> metric_lines(const std::string& text) {
    std::vector<MetricLine> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        MetricLine m;
        std::size_t at = line.find_first_of("{ ");
        m.name = line.substr(0, at);
        if (at < line.size() && line[at] == '{') {
            ++at;
            while (at < line.size() && line[at] != '}') {
                const auto eq = line.find('=', at);
                const std::string key = line.substr(at, eq - at);
                std::string value;
                at = eq + 2; // past ="
                while (at < line.size() && line[at] != '"') {
                    if (line[at] == '\\' && at + 1 < line.size()) ++at;
                    value += line[at++];
                }
                m.labels[key] = value;
                at += 1; // past "
                if (at < line.size() && line[at] == ',') ++at;
            }
            ++at; // past }
        }
        const auto start = line.find_first_not_of(' ', at);
        m.value = line.substr(start, line.find(' ', start) - start);
        out.push_back(std::move(m));
    }
    return out;
}
// The value of the first sample of `name` whose label `key` is `value` (no key: any), as a
// whole number; "absent" if there is none.
inline std::string metric(const std::vector<MetricLine>& lines, const std::string& name,
                          const std::string& key, const std::string& value) {
    for (const MetricLine& m : lines) {
        if (m.name != name) continue;
        if (!key.empty()) {
            auto it = m.labels.find(key);
            if (it == m.labels.end() || it->second != value) continue;
        }
        return std::to_string(std::llround(std::stod(m.value)));
    }
    return "absent";
}
// A KiB figure in bytes as the OpenMetrics export writes it; "absent" if unavailable.
inline std::string bytes(const json& kib) {
    return kib.is_null() ? "absent" : std::to_string(kib.get<std::int64_t>() * 1024);
}
inline std::string to_text(const std::map<std::string, int>& counts) {
    std::string out;
    for (const auto& [k, v] : counts)
        out += fmt::format("{}={} ", k, v);
    return out;
}
// What `check` measured for the rule `name` ("absent": no such line).
inline std::string check_measured(const std::vector<std::string>& lines, const std::string& name) {
    for (const std::string& line : lines) {
        const auto at = line.find("  " + name + "  ");
        if (at == std::string::npos) continue;
        const auto start = line.find_first_not_of(' ', at + name.size() + 2);
        return line.substr(start, line.find("  ", start) - start);
    }
    return "absent";
}

} // namespace loaderlens::test::consumers_agree
