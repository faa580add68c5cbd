// SPDX-License-Identifier: MIT
#include "exposition.hpp"

#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <set>

namespace loaderlens::test {

namespace {

bool name_char(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

// Parses `name{a="x",b="y"} value [timestamp]`; the reason when it cannot.
std::optional<std::string> parse_sample(const std::string& line, ExpositionSample& s) {
    std::size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0))
        ++i;
    if (i == 0) return "no metric name";
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
            const std::size_t start = i;
            while (i < line.size() && name_char(line[i], i == start) && line[i] != ':')
                ++i;
            if (i == start || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
                return "bad label name";
            const std::string label = line.substr(start, i - start);
            i += 2;
            std::string value;
            for (; i < line.size() && line[i] != '"'; ++i) {
                if (line[i] != '\\') {
                    value += line[i];
                    continue;
                }
                if (++i >= line.size()) return "escape at the end";
                if (line[i] == 'n')
                    value += '\n';
                else if (line[i] == '\\' || line[i] == '"')
                    value += line[i];
                else
                    return "unknown escape";
            }
            if (i >= line.size()) return "unclosed label value";
            ++i;
            if (!s.labels.emplace(label, value).second) return "duplicate label " + label;
            if (i < line.size() && line[i] == ',') ++i;
        }
        if (i >= line.size()) return "unclosed labels";
        ++i;
    }
    if (i >= line.size() || line[i] != ' ') return "no space before the value";
    const std::string rest = line.substr(i + 1);
    const std::size_t space = rest.find(' ');
    s.value = rest.substr(0, space);
    if (space != std::string::npos) s.timestamp = rest.substr(space + 1);
    try {
        std::size_t used = 0;
        std::stold(s.value, &used);
        if (used != s.value.size()) return "bad value";
        if (s.timestamp) {
            std::stold(*s.timestamp, &used);
            if (used != s.timestamp->size()) return "bad timestamp";
        }
    } catch (const std::exception&) {
        return "bad number";
    }
    return std::nullopt;
}

} // namespace

Exposition parse_exposition(const std::string& text, bool openmetrics) {
    Exposition out;
    if (text.empty() || text.back() != '\n') {
        out.error = "does not end with a newline";
        return out;
    }
    if (text.find('\r') != std::string::npos) {
        out.error = "carriage return";
        return out;
    }
    std::set<std::string> closed, sampled, series;
    std::string current; // the family whose lines come now
    bool eof = false;
    const auto lines = lines_of(text);
    for (std::size_t n = 0; n < lines.size() && out.error.empty(); ++n) {
        const std::string& line = lines[n];
        auto fail = [&](const std::string& why) {
            out.error = "line " + std::to_string(n + 1) + ": " + why + ": " + line;
        };
        if (eof) {
            fail("after # EOF");
            break;
        }
        if (line == "# EOF") {
            if (!openmetrics) fail("# EOF in the 0.0.4 format");
            eof = true;
            continue;
        }
        if (line.starts_with("#")) {
            const std::size_t a = line.find(' ', 2);
            const std::size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
            if (line.size() < 3 || line[1] != ' ' || b == std::string::npos) {
                fail("a comment that is not HELP, TYPE or UNIT");
                continue;
            }
            const std::string kind = line.substr(2, a - 2), name = line.substr(a + 1, b - a - 1);
            if (closed.contains(name) || sampled.contains(name)) {
                fail("metadata after the family's samples");
                continue;
            }
            if (name != current) {
                if (!current.empty()) closed.insert(current);
                current = name;
            }
            auto* map = kind == "HELP"                  ? &out.help
                        : kind == "TYPE"                ? &out.type
                        : kind == "UNIT" && openmetrics ? &out.unit
                                                        : nullptr;
            if (!map)
                fail("unknown metadata " + kind);
            else if (!map->emplace(name, line.substr(b + 1)).second)
                fail("second " + kind);
            continue;
        }
        ExpositionSample s;
        if (auto problem = parse_sample(line, s)) {
            fail(*problem);
            continue;
        }
        if (s.name != current) fail("interleaved or without metadata");
        if (!out.type.contains(s.name) || !out.help.contains(s.name))
            fail("a sample before its TYPE and HELP");
        if (s.timestamp && !openmetrics) fail("a timestamp (the textfile collector refuses it)");
        std::string key = s.name;
        for (const auto& [k, v] : s.labels)
            key += "\x01" + k + "\x02" + v;
        if (!s.timestamp && !series.insert(key).second) fail("duplicate series");
        sampled.insert(s.name);
        out.samples.push_back(std::move(s));
    }
    if (out.error.empty() && openmetrics && !eof) out.error = "no # EOF";
    return out;
}

std::vector<const ExpositionSample*>
Exposition::find(const std::string& name, const std::map<std::string, std::string>& match) const {
    std::vector<const ExpositionSample*> found;
    for (const ExpositionSample& s : samples) {
        if (s.name != name) continue;
        bool all = true;
        for (const auto& [k, v] : match) {
            auto it = s.labels.find(k);
            all = all && it != s.labels.end() && it->second == v;
        }
        if (all) found.push_back(&s);
    }
    return found;
}

std::optional<long double>
Exposition::value(const std::string& name, const std::map<std::string, std::string>& match) const {
    const auto found = find(name, match);
    BOOST_TEST(found.size() <= 1u, name << ": " << found.size() << " samples match");
    if (found.empty()) return std::nullopt;
    return std::stold(found.front()->value);
}

PromtoolResult promtool_check(const std::string& file) {
    const RunResult r = run({"/bin/sh", "-c", "exec promtool check metrics < \"$1\"", "sh", file});
    return {r.exit_code, r.out, r.err};
}

} // namespace loaderlens::test
