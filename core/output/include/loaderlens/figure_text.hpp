// SPDX-License-Identifier: MIT
// How every consumer (the text report, the dashboard) writes the figures it shares, so that one
// figure reads the same everywhere: what a scheduler view holds against its limit, a signed size,
// a finding's key figure with what it is, a carried figure's age. Reads the diagnosis; derives
// nothing the analysis layer does not say (tests/consumers_agree.cpp compares them).
#pragma once

#include "loaderlens/diagnosis.hpp"
#include "loaderlens/units.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace loaderlens {

// What the scheduler counts for the job at the view's peak (SchedulerView::counted_kb).
inline Kib scheduler_counted_kb(const SchedulerView& view) {
    return view.counted_kb;
}

// A size that may be negative: "-81.5 MiB" (format_kib writes a negative one in KiB).
inline std::string signed_size_text(const Kib& kb) {
    if (!kb) return "n/a";
    return *kb < 0 ? "-" + format_kib(saturating_sub(0, *kb)) : format_kib(kb);
}

// margin_text: units.hpp (check's own rule text says it too).

// printf into a string (header only: the dashboard includes this without linking fmt).
template <typename... Args> std::string printed(const char* format, Args... args) {
    char text[64] = {};
    std::snprintf(text, sizeof text, format, args...);
    return text;
}

// A finding's key figure with what it is: "margin: over by 81.5 MiB", "growth per epoch:
// 8.0 MiB/epoch", "amplification: 3.2x".
inline std::string finding_figure_text(const Finding& f) {
    std::string what = f.figure_name;
    if (what == "margin_kb") return "margin: " + margin_text(std::llround(f.figure));
    for (const char* suffix : {"_kb_per_epoch", "_kb_per_s", "_kb", "_pages"})
        if (what.ends_with(suffix)) {
            what.resize(what.size() - std::string(suffix).size());
            break;
        }
    for (char& c : what)
        if (c == '_') c = ' ';
    std::string value;
    if (f.figure_unit == "KiB")
        value = signed_size_text(std::llround(f.figure));
    else if (f.figure_unit == "KiB/epoch")
        value = signed_size_text(std::llround(f.figure)) + "/epoch";
    else if (f.figure_unit == "KiB/s")
        value = signed_size_text(std::llround(f.figure)) + "/s";
    else if (f.figure_unit == "x")
        value = printed("%.1fx", f.figure);
    else
        value = printed("%.4g ", f.figure) + f.figure_unit;
    return what.empty() ? value : what + ": " + value;
}

// A figure carried from an older reading: "4.9 s old"; empty when read at its tick.
inline std::string age_text(std::int64_t age_ms) {
    if (age_ms <= 0) return {};
    return printed("%.1f s old", static_cast<double>(age_ms) / 1000.0);
}

} // namespace loaderlens
