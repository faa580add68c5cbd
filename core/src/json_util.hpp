// SPDX-License-Identifier: MIT
// JSON pieces shared by the report and the export (private to core: nlohmann stays out of the API).
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/types.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace loaderlens::json_util {

// Bounds on JSON read from a recording: nlohmann parses any depth, but dumping it recurses once per
// level (200 KB of "[[[..." took 8 GB and then the stack) and the config is a flat object anyway.
inline constexpr int max_recorded_json_depth = 64;
inline constexpr std::size_t max_recorded_json_bytes = 1 << 20;

// Whether brackets nest deeper than `limit` in `text` (outside strings): checked before parsing.
inline bool nests_deeper_than(const std::string& text, int limit) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) return true;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return false;
}

// The reference loader's config (meta loader.config) as JSON: null when the recording has none.
// Anything but a JSON object within the bounds above is damage: RecordingError naming the file
// and the key.
inline nlohmann::json loader_config(const std::string& path, const std::string& text) {
    if (text.empty()) return nullptr;
    auto damaged = [&](const std::string& why) {
        return RecordingError(path + ": meta loader.config " + why +
                              " where the loader's JSON object belongs (damaged recording?)");
    };
    if (text.size() > max_recorded_json_bytes)
        throw damaged("holds " + std::to_string(text.size()) + " bytes");
    if (nests_deeper_than(text, max_recorded_json_depth))
        throw damaged("nests deeper than " + std::to_string(max_recorded_json_depth) + " levels");
    auto config = nlohmann::json::parse(text, nullptr, false);
    if (!config.is_object()) throw damaged("holds something else");
    return config;
}

// An unavailable figure is null, never 0.
inline nlohmann::json optional(const Kib& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Who a process is: identity, role, slot, lifetime.
inline nlohmann::json process_identity(const ProcessInfo& p) {
    using nlohmann::json;
    return {{"id", p.id},
            {"pid", p.key.pid},
            {"ppid", p.ppid},
            {"start_ticks", p.key.start_ticks},
            {"comm", p.comm},
            {"cmdline", p.cmdline},
            {"role", to_string(p.role)},
            {"slot", p.slot >= 0 ? json(p.slot) : json(nullptr)},
            {"generation", p.generation >= 0 ? json(p.generation) : json(nullptr)},
            {"birth_ms", p.birth_ms},
            {"exit_ms", optional(p.exit_ms)},
            {"exit_status", p.exit_status ? json(*p.exit_status) : json(nullptr)}};
}

} // namespace loaderlens::json_util
