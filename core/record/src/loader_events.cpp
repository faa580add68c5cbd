// SPDX-License-Identifier: MIT
// The reference loader's events, read from its JSON-lines file (docs/recording.md, "Loader
// events").
#include "loaderlens/loader_events.hpp"

#include <fcntl.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace loaderlens {

using nlohmann::json;

void add_loader_event(const std::string& line, const RecordingClock& clock, LoaderRun& run) {
    if (line.empty()) return;
    try {
        const json event = json::parse(line);
        const std::string kind = event.at("event").get<std::string>();
        if (kind == "config") {
            run.config_json = line;
        } else if (kind == "worker") {
            run.workers.push_back({event.at("worker").get<int>(), event.at("generation").get<int>(),
                                   event.at("epoch").get<int>(),
                                   event.at("pid").get<std::int64_t>(),
                                   clock.boot_ns_to_ms(event.at("boot_ns").get<std::int64_t>())});
        } else if (kind == "epoch") {
            run.epochs.push_back(
                {event.at("epoch").get<int>(), event.at("generation").get<int>(),
                 clock.boot_ns_to_ms(event.at("start_boot_ns").get<std::int64_t>()),
                 clock.boot_ns_to_ms(event.at("end_boot_ns").get<std::int64_t>()),
                 event.at("samples").get<std::int64_t>(), event.at("batches").get<std::int64_t>(),
                 event.at("bytes_read").get<std::int64_t>()});
        } else if (kind == "progress") {
            run.progress.push_back({clock.boot_ns_to_ms(event.at("boot_ns").get<std::int64_t>()),
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

LoaderRun read_loader_events(const std::string& path, const RecordingClock& clock) {
    LoaderRun run;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
        add_loader_event(line, clock, run);
    return run;
}

LoaderRun LoaderEventTail::poll(const RecordingClock& clock, bool at_end) {
    LoaderRun run;
    if (fd_ < 0) {
        fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd_ < 0) return run; // not created yet (or gone): nothing to read
    }
    char buffer[64 * 1024];
    // Bounded per poll so that a loader writing fast never holds up the fast tier's tick.
    for (int reads = 0; reads < 64; ++reads) {
        const ssize_t n = ::read(fd_, buffer, sizeof buffer);
        if (n <= 0) break;
        partial_.append(buffer, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (std::size_t end; (end = partial_.find('\n', start)) != std::string::npos;
             start = end + 1)
            add_loader_event(partial_.substr(start, end - start), clock, run);
        partial_.erase(0, start);
        // A line longer than any event the loader writes is not one: dropped, counted.
        if (partial_.size() > longest_line) {
            partial_.clear();
            ++run.unreadable_lines;
        }
    }
    if (at_end && !partial_.empty()) { // the loader stopped mid-line (killed): whatever is there
        add_loader_event(partial_, clock, run);
        partial_.clear();
    }
    return run;
}

LoaderEventTail::~LoaderEventTail() {
    if (fd_ >= 0) ::close(fd_);
}

} // namespace loaderlens
