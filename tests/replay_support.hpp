// SPDX-License-Identifier: MIT
// Running the reference loader from tests: datasets made with `loaderlens mkdata`, runs with
// `loaderlens load` / `replay`, and per-process figures looked up in the recording.
#pragma once

#include "loaderlens/recording.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <map>

namespace loaderlens::test {

// Runs `loaderlens mkdata ARGS...` and requires success.
inline void mkdata(const std::vector<std::string>& args) {
    std::vector<std::string> argv{cli_path(), "mkdata"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = run(argv);
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "mkdata failed: " + result.err);
}

// Runs `loaderlens replay DATASET ARGS... -o OUTPUT` and requires success.
inline RunResult replay(const std::string& output, const std::vector<std::string>& args,
                        std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
    std::vector<std::string> argv{cli_path(), "replay", "-q", "-o", output};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = run(argv, timeout);
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, "replay failed (" +
                                                     std::to_string(result.exit_code) +
                                                     "): " + result.err);
    return result;
}

inline std::int64_t object_id_of(const Recording& recording, const std::string& path_suffix) {
    for (const auto& object : recording.objects())
        if (object.path.size() >= path_suffix.size() &&
            object.path.compare(object.path.size() - path_suffix.size(), path_suffix.size(),
                                path_suffix) == 0)
            return object.id;
    return -1;
}

// One process's series of a mapped object: t_ms -> figures (a missing row means under the maps
// tier's size threshold, i.e. about 0).
inline std::map<std::int64_t, MappedObject>
file_series(const Recording& recording, std::int64_t process_id, std::int64_t object_id) {
    std::map<std::int64_t, MappedObject> out;
    for (const auto& row : recording.maps())
        if (row.process_id == process_id && row.object_id == object_id) out[row.t_ms] = row.figures;
    return out;
}

// The time of the first marker with this text.
inline std::int64_t marker_time(const Recording& recording, const std::string& text) {
    for (const auto& marker : recording.markers())
        if (marker.text == text) return marker.t_ms;
    BOOST_FAIL("no marker '" + text + "'");
    return -1;
}

inline std::vector<ProcessInfo> workers_of(const Recording& recording) {
    std::vector<ProcessInfo> out;
    for (const auto& p : recording.processes())
        if (p.role == Role::worker) out.push_back(p);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::tie(a.generation, a.slot) < std::tie(b.generation, b.slot);
    });
    return out;
}

inline ProcessInfo main_of(const Recording& recording) {
    for (const auto& p : recording.processes())
        if (p.role == Role::main) return p;
    BOOST_FAIL("no main process");
    return {};
}

} // namespace loaderlens::test
