// SPDX-License-Identifier: MIT
#include "metric_set.hpp"

#include "loaderlens/utf8.hpp"

namespace loaderlens::metrics {

namespace {

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
        const Utf8Step step = utf8_step(text, i);
        const char c = text[i];
        if (!step.well_formed)
            out += replacement_character;
        else if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out.append(text.substr(i, step.length));
        i += step.length;
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
