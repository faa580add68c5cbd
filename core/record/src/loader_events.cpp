// SPDX-License-Identifier: MIT
// The reference loader's events, read from its JSON-lines file (docs/recording.md, "Loader
// events").
#include "loaderlens/loader_events.hpp"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unistd.h>

namespace loaderlens {

using nlohmann::json;

namespace {

// An integer field of an event. Anything else (a float such as 1e308, which get<int64_t> would
// convert with undefined behaviour; text; null) makes the line unreadable.
template <typename T> T whole(const json& event, const char* key) {
    const json& value = event.at(key);
    if (!value.is_number_integer()) throw std::invalid_argument(key);
    return value.get<T>();
}

std::vector<std::int64_t> whole_numbers(const json& event, const char* key) {
    const json& values = event.at(key);
    if (!values.is_array()) throw std::invalid_argument(key);
    std::vector<std::int64_t> out;
    for (const json& value : values) {
        if (!value.is_number_integer()) throw std::invalid_argument(key);
        out.push_back(value.get<std::int64_t>());
    }
    return out;
}

} // namespace

void add_loader_event(const std::string& line, const RecordingClock& clock, LoaderRun& run) {
    if (line.empty()) return;
    try {
        const json event = json::parse(line);
        const std::string kind = event.at("event").get<std::string>();
        if (kind == "config") {
            run.config_json = line;
        } else if (kind == "worker") {
            run.workers.push_back({whole<int>(event, "worker"), whole<int>(event, "generation"),
                                   whole<int>(event, "epoch"), whole<std::int64_t>(event, "pid"),
                                   clock.boot_ns_to_ms(whole<std::int64_t>(event, "boot_ns"))});
        } else if (kind == "epoch") {
            run.epochs.push_back({whole<int>(event, "epoch"), whole<int>(event, "generation"),
                                  clock.boot_ns_to_ms(whole<std::int64_t>(event, "start_boot_ns")),
                                  clock.boot_ns_to_ms(whole<std::int64_t>(event, "end_boot_ns")),
                                  whole<std::int64_t>(event, "samples"),
                                  whole<std::int64_t>(event, "batches"),
                                  whole<std::int64_t>(event, "bytes_read")});
        } else if (kind == "progress") {
            run.progress.push_back({clock.boot_ns_to_ms(whole<std::int64_t>(event, "boot_ns")),
                                    whole<int>(event, "epoch"), whole<int>(event, "generation"),
                                    whole<std::int64_t>(event, "bytes_read"),
                                    whole<std::int64_t>(event, "distinct_bytes"),
                                    whole_numbers(event, "workers")});
        } else if (kind == "end") {
            run.status = event.at("status").get<std::string>();
            run.message = event.value("message", "");
        } else {
            ++run.unreadable_lines;
        }
    } catch (const json::exception&) {
        ++run.unreadable_lines;
    } catch (const std::invalid_argument&) {
        ++run.unreadable_lines;
    }
}

LoaderRun LoaderEventTail::poll(const RecordingClock& clock, bool at_end) {
    LoaderRun run;
    if (fd_ < 0) return run;
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

LoaderEventTail::LoaderEventTail(const Sidecar& sidecar) {
    if (sidecar.fd >= 0) fd_ = ::fcntl(sidecar.fd, F_DUPFD_CLOEXEC, 0);
}

LoaderEventTail::~LoaderEventTail() {
    if (fd_ >= 0) ::close(fd_);
}

} // namespace loaderlens
