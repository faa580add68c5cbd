// SPDX-License-Identifier: MIT
// `loaderlens tail`: follows a recording while it is written (like tail -f): a line per interval
// with the tree's sums at the latest tick, and the markers and the loader's epochs as they come.
// One cursor: each poll reads only what is new (docs/recording.md, "Reading while it is written").
#include "commands.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/series.hpp"
#include "loaderlens/units.hpp"

#include <cerrno>
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <sys/stat.h>
#include <thread>
#include <utility>

namespace loaderlens::cli {

namespace {

// The sum of `figure` over the tree at the latest tick in `delta`.
std::string latest_sum(const RecordingData& delta, Figure figure) {
    const Series sums = series(delta, {.figure = figure});
    if (sums.points.empty()) return "-";
    const SeriesPoint& last = sums.points.back();
    return format_kib(last.value) + (last.partial ? " (partial)" : "");
}

int count_role(const std::vector<ProcessInfo>& processes, Role role) {
    int n = 0;
    for (const ProcessInfo& p : processes)
        n += p.role == role && !p.exit_ms;
    return n;
}

// Prints what `delta` brought; `processes` holds every process read so far.
void print_delta(RecordingData& delta, const std::vector<ProcessInfo>& processes) {
    for (const Marker& m : delta.markers)
        std::cout << fmt::format("{:9.1f} s  marker ({}): {}\n", m.t_ms / 1000.0, m.source,
                                 one_line(m.text));
    for (const LoaderEpoch& e : delta.loader.epochs)
        std::cout << fmt::format("{:9.1f} s  epoch {} done: {:.1f} s, {} samples, {:.0f} MiB/s\n",
                                 e.end_ms / 1000.0, e.epoch, e.seconds(), e.samples,
                                 e.mib_per_second());
    if (delta.fast.empty()) return;
    delta.processes = processes; // the series select among every process, not only new ones
    std::cout << fmt::format("{:9.1f} s  {} alive ({} workers)  sum RSS {}  sum PSS {}\n",
                             delta.fast.back().t_ms / 1000.0,
                             count_role(processes, Role::main) +
                                 count_role(processes, Role::worker) +
                                 count_role(processes, Role::helper),
                             count_role(processes, Role::worker), latest_sum(delta, Figure::rss),
                             latest_sum(delta, Figure::pss));
}

// Which file `name` leads to now (st_dev, st_ino); nullopt when it leads nowhere (deleted,
// renamed away). A name that cannot be looked up for another reason (permission) counts as
// unchanged: only a file seen gone or replaced ends the following.
using FileIdentity = std::pair<dev_t, ino_t>;
std::optional<FileIdentity> file_at(const std::string& name, std::optional<FileIdentity> fallback) {
    struct stat st {};
    if (::stat(name.c_str(), &st) == 0) return FileIdentity{st.st_dev, st.st_ino};
    return errno == ENOENT || errno == ENOTDIR ? std::nullopt : fallback;
}

// The recording followed no longer has its name: one line, exit 2 (docs/cli.md, "Exit codes").
std::optional<std::string> lost_name(const std::string& name, const FileIdentity& followed) {
    const auto now = file_at(name, followed);
    if (!now) return name + ": deleted or renamed away while it was followed";
    if (*now != followed)
        return name + ": replaced by another file while it was followed (not the recording " +
               "followed until now)";
    return std::nullopt;
}

} // namespace

Runner add_tail(CLI::App& app) {
    struct Options {
        std::string file, interval = "1s";
        bool from_start = false;
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub = app.add_subcommand(
        "tail", "Follow a recording while it is written: sums, markers and epochs as they come");
    sub->add_option("file", o->file, "Recording file")->required();
    sub->add_option("--interval", o->interval, "How often to look (100ms to 1min)")
        ->capture_default_str();
    sub->add_flag("--from-start", o->from_start,
                  "Print what the recording holds already, then follow (default: from now)");
    return [o] {
        if (auto problem = recording_name_problem(o->file)) {
            print_error(*problem);
            return exit_bad_input;
        }
        const auto interval_us = parse_duration_us(o->interval);
        if (!interval_us || *interval_us < 100'000 || *interval_us > 60'000'000) {
            print_error("--interval " + o->interval + ": not a duration from 100ms to 1min");
            return exit_bad_input;
        }
        try {
            Recording recording(o->file);
            // Opened by name: what the name leads to once open is what is followed.
            const auto followed = file_at(o->file, std::nullopt);
            Cursor cursor;
            RecordingData seen; // processes only: the rest is printed and dropped
            // From now: past the rows there are (processes are read whole once all the same).
            if (!o->from_start) cursor = recording.cursor_at_end();
            for (;;) {
                // SQLite reads on from its open file, which nobody writes any more: "cut".
                if (auto lost = followed ? lost_name(o->file, *followed) : std::nullopt) {
                    print_error(*lost);
                    return exit_bad_input;
                }
                if (recording.has_new(cursor)) {
                    RecordingData delta = recording.read_new(cursor);
                    RecordingData names;
                    names.processes = delta.processes;
                    seen.append(std::move(names));
                    print_delta(delta, seen.processes);
                    std::cout.flush();
                    if (!std::cout) return exit_internal; // main() says why
                }
                const RecordingEnd end = recording.end();
                // Its writer is looked for by name: a file gone from it since the look above
                // reads as cut.
                if (end.state == RecordingEnd::State::cut && followed)
                    if (auto lost = lost_name(o->file, *followed)) {
                        print_error(*lost);
                        return exit_bad_input;
                    }
                if (end.state != RecordingEnd::State::being_written) {
                    std::cout << (end.state == RecordingEnd::State::finished
                                      ? "recording finished\n"
                                      : "recording stopped without finishing (cut)\n");
                    return exit_ok;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(*interval_us));
            }
        } catch (const RecordingError& e) {
            print_error(e.what());
            return exit_bad_input;
        }
    };
}

} // namespace loaderlens::cli
