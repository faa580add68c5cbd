// SPDX-License-Identifier: MIT
#include "metric_set.hpp"

namespace loaderlens::metrics {

namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char c = byte(0);
    if (c < 0x80) return 1;
    std::size_t n = 0;
    unsigned char low = 0x80, high = 0xBF; // the second byte's range
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) low = 0xA0;
        if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) low = 0x90;
        if (c == 0xF4) high = 0x8F;
    } else
        return 0;
    if (i + n > text.size()) return 0;
    if (byte(1) < low || byte(1) > high) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
    return n;
}

void append_labels(std::string& out, const Labels& labels) {
    if (labels.empty()) return;
    out += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
        if (i) out += ',';
        out += labels[i].first;
        out += "=\"";
        out += escape_label_value(labels[i].second);
        out += '"';
    }
    out += '}';
}

} // namespace

std::string escape_label_value(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_length(text, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD"; // U+FFFD
            ++i;
            continue;
        }
        const char c = text[i];
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out.append(text.substr(i, n));
        i += n;
    }
    return out;
}

void MetricSet::add(Family family, const Labels& labels, std::optional<std::string> value,
                    std::optional<std::int64_t> unix_ms) {
    auto& series = families_[static_cast<std::size_t>(family)];
    if (keep_ == Keep::latest) {
        if (!value)
            series.erase(labels);
        else
            series[labels] = {Point{std::move(*value), std::nullopt}};
        return;
    }
    if (value) series[labels].push_back({std::move(*value), unix_ms});
}

std::string MetricSet::render(TextFormat format) const {
    const bool om = format == TextFormat::openmetrics;
    std::string out;
    for (std::size_t f = 0; f < family_count; ++f) {
        const auto& series = families_[f];
        if (series.empty()) continue;
        const FamilySpec& s = spec(static_cast<Family>(f));
        const std::string name(s.name);
        // OpenMetrics wants TYPE, UNIT, HELP in that order; 0.0.4 has no UNIT.
        if (!om) out += "# HELP " + name + " " + std::string(s.help) + "\n";
        out += "# TYPE " + name + " gauge\n";
        if (om && !s.unit.empty()) out += "# UNIT " + name + " " + std::string(s.unit) + "\n";
        if (om) out += "# HELP " + name + " " + std::string(s.help) + "\n";
        for (const auto& [labels, points] : series)
            for (const Point& p : points) {
                out += name;
                append_labels(out, labels);
                out += ' ';
                out += p.value;
                if (om && p.unix_ms) out += " " + seconds(*p.unix_ms);
                out += '\n';
            }
    }
    if (om) out += "# EOF\n";
    return out;
}

} // namespace loaderlens::metrics
