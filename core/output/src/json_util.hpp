// SPDX-License-Identifier: MIT
// JSON pieces shared by the report and the export (private to core: nlohmann stays out of the API).
#pragma once

#include "loaderlens/recording.hpp"
#include "loaderlens/types.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace loaderlens::json_util {

// The reference loader's config (meta loader.config) as JSON: null when the recording has none.
// Recording::loader_run() checked it is a JSON object within bounds (damage is a RecordingError).
inline nlohmann::json loader_config(const std::string& text) {
    if (text.empty()) return nullptr;
    return nlohmann::json::parse(text, nullptr, false);
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
