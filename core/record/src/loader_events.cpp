// SPDX-License-Identifier: MIT
// The reference loader's events, read from its JSON-lines file (docs/recording.md, "Loader
// events").
#include "loaderlens/loader_events.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

namespace loaderlens {

using nlohmann::json;

LoaderRun read_loader_events(const std::string& path, const RecordingClock& clock) {
    LoaderRun run;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        try {
            const json event = json::parse(line);
            const std::string kind = event.at("event").get<std::string>();
            if (kind == "config") {
                run.config_json = line;
            } else if (kind == "worker") {
                run.workers.push_back(
                    {event.at("worker").get<int>(), event.at("generation").get<int>(),
                     event.at("epoch").get<int>(), event.at("pid").get<std::int64_t>(),
                     clock.boot_ns_to_ms(event.at("boot_ns").get<std::int64_t>())});
            } else if (kind == "epoch") {
                run.epochs.push_back(
                    {event.at("epoch").get<int>(), event.at("generation").get<int>(),
                     clock.boot_ns_to_ms(event.at("start_boot_ns").get<std::int64_t>()),
                     clock.boot_ns_to_ms(event.at("end_boot_ns").get<std::int64_t>()),
                     event.at("samples").get<std::int64_t>(),
                     event.at("batches").get<std::int64_t>(),
                     event.at("bytes_read").get<std::int64_t>()});
            } else if (kind == "progress") {
                run.progress.push_back(
                    {clock.boot_ns_to_ms(event.at("boot_ns").get<std::int64_t>()),
                     event.at("epoch").get<int>(), event.at("generation").get<int>(),
                     event.at("bytes_read").get<std::int64_t>(),
                     event.at("distinct_bytes").get<std::int64_t>(),
                     event.at("workers").get<std::vector<std::int64_t>>()});
            } else if (kind == "end") {
                run.status = event.at("status").get<std::string>();
                run.message = event.value("message", "");
            } else {
                ++run.unreadable_lines;
            }
        } catch (const json::exception&) {
            ++run.unreadable_lines;
        }
    }
    return run;
}

} // namespace loaderlens
