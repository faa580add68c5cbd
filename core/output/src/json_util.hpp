// SPDX-License-Identifier: MIT
// JSON pieces shared by the report and the export (private to core: nlohmann stays out of the API).
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/types.hpp"

#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace loaderlens::json_util {

// The reference loader's config (meta loader.config) as JSON: null when the recording has none.
// Recording::loader_run() checked it is a JSON object within bounds (damage is a RecordingError).
inline nlohmann::json loader_config(const std::string& text) {
    if (text.empty()) return nullptr;
    return nlohmann::json::parse(text, nullptr, false);
}

// The wall-clock start of the recording's time axis (meta start_unix_ns; of a merged recording the
// earliest part's start, where its job axis begins): nullopt when meta has none or it is no number.
// Every t_ms of the recording is a CLOCK_BOOTTIME offset from that start, so a sample's Unix time
// is start + t_ms * 1e6 (docs/outputs.md says why that is as exact as the recording knows).
inline std::optional<std::int64_t> start_unix_ns(const std::map<std::string, std::string>& meta) {
    auto it = meta.find("start_unix_ns");
    if (it == meta.end() || it->second.empty()) return std::nullopt;
    std::int64_t value = 0;
    const char* end = it->second.data() + it->second.size();
    auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
    if (ec != std::errc() || ptr != end) return std::nullopt;
    return value;
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
            {"exit_status", p.exit_status ? json(*p.exit_status) : json(nullptr)},
            {"part", p.part > 0 ? json(p.part) : json(nullptr)}}; // a merged recording's part id
}

} // namespace loaderlens::json_util
