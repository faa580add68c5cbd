// SPDX-License-Identifier: MIT
#include "loader_meta.hpp"

#include "loaderlens/recording.hpp"

#include <nlohmann/json.hpp>

namespace loaderlens {

namespace {

// Bounds on JSON read from a recording: nlohmann parses any depth, but dumping it recurses once per
// level (200 KB of "[[[..." took 8 GB and then the stack) and the config is a flat object anyway.
constexpr int max_recorded_json_depth = 64;
constexpr std::size_t max_recorded_json_bytes = 1 << 20;

// Whether brackets nest deeper than `limit` in `text` (outside strings): checked before parsing.
bool nests_deeper_than(const std::string& text, int limit) {
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
nlohmann::json loader_config(const std::string& path, const std::string& text) {
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

} // namespace

void take_loader_meta(const std::string& path, RecordingData& data) {
    auto value = [&](const char* key) {
        auto it = data.meta.find(key);
        return it == data.meta.end() ? std::string() : it->second;
    };
    data.loader.config_json = value("loader.config");
    loader_config(path, data.loader.config_json);
    data.loader.status = value("loader.status");
    data.loader.message = value("loader.message");
}

} // namespace loaderlens
