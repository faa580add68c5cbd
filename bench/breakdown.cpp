// SPDX-License-Identifier: MIT
// Where a tier's time goes beyond the kernel read: the proc_text helpers against the same raw
// read, the parsers alone on captured text, and the tree scan that every fast tick starts with.
// Informational (no targets): these rows explain the ratios of the tier table.
#include "loaderlens/clock.hpp"
#include "loaderlens/fast_sampler.hpp"
#include "loaderlens/maps_sampler.hpp"
#include "loaderlens/proc_text.hpp"
#include "loaderlens/rollup_sampler.hpp"
#include "loaderlens/tree_tracker.hpp"
#include "paired.hpp"

namespace loaderlens::bench {

namespace {

// The text of a /proc file of the subject, captured once for the parser rows.
std::string capture(const Subject& s, const char* file) {
    auto text = read_text_file(s.proc_path(file));
    if (!text || text->empty()) throw SetupError("cannot read " + s.proc_path(file));
    return *text;
}

void pread_whole_row(benchmark::State& state, const Subject& s) {
    std::string buffer;
    paired(
        state, [&] { return pread_whole(s.statm, buffer) > 0; },
        [&] { return raw_pread(s.statm); });
}

void read_text_file_row(benchmark::State& state, const Subject& s, const char* file) {
    const std::string path = s.proc_path(file);
    paired(
        state, [&] { return read_text_file(path).has_value(); },
        [&] { return raw_read_file(path); });
}

template <typename Parse>
void parser_row(benchmark::State& state, const Subject& s, const char* file, Parse parse) {
    const std::string text = capture(s, file);
    solo(state, [&] { return parse(std::string_view(text)); });
}

// What the fast thread does before sampling: list /proc, re-read the stat of tree members (and
// of PIDs new since the last tick), copy the live set out. Cost grows with processes on the
// machine.
void tree_scan_row(benchmark::State& state, const Subject& s) {
    const RecordingClock clock;
    TreeTracker tracker(
        {.scan_root = s.info.key.pid, .track_scan_root = true, .main_pid = s.info.key.pid}, clock);
    std::size_t machine = 0;
    solo(state, [&] {
        tracker.scan();
        machine = tracker.processes_on_machine();
        return tracker.live().size() == 1;
    });
    state.counters["machine_procs"] = static_cast<double>(machine);
}

} // namespace

const std::vector<Row>& breakdown_rows() {
    static const std::vector<Row> all{
        {"proc/pread_whole_statm", "proc", "pread_whole(statm)", "pread statm", std::nullopt,
         pread_whole_row},
        {"proc/read_text_file_stat", "proc", "read_text_file(stat)", "open+read stat", std::nullopt,
         [](auto& st, const Subject& s) { read_text_file_row(st, s, "stat"); }},
        {"proc/read_text_file_smaps", "proc", "read_text_file(smaps)", "open+read smaps",
         std::nullopt, [](auto& st, const Subject& s) { read_text_file_row(st, s, "smaps"); }},
        {"parse/statm", "parse", "parse_statm", "-", std::nullopt,
         [](auto& st, const Subject& s) {
             parser_row(st, s, "statm",
                        [](std::string_view t) { return parse_statm(t).has_value(); });
         }},
        {"parse/status", "parse", "parse_status_memory", "-", std::nullopt,
         [](auto& st, const Subject& s) {
             parser_row(st, s, "status", [](std::string_view t) {
                 FastSample sample;
                 parse_status_memory(t, sample);
                 return sample.rss.has_value();
             });
         }},
        {"parse/smaps_rollup", "parse", "parse_smaps_rollup", "-", std::nullopt,
         [](auto& st, const Subject& s) {
             parser_row(st, s, "smaps_rollup", [](std::string_view t) {
                 RollupSample sample;
                 parse_smaps_rollup(t, sample);
                 return sample.pss.has_value();
             });
         }},
        {"parse/smaps", "parse", "aggregate_smaps", "-", std::nullopt,
         [](auto& st, const Subject& s) {
             parser_row(st, s, "smaps",
                        [](std::string_view t) { return !aggregate_smaps(t, 1024).empty(); });
         }},
        {"parse/stat", "parse", "parse_stat", "-", std::nullopt,
         [](auto& st, const Subject& s) {
             parser_row(st, s, "stat",
                        [](std::string_view t) { return parse_stat(t).has_value(); });
         }},
        {"tree/scan", "tree", "TreeTracker scan+live, 1 proc", "-", std::nullopt, tree_scan_row},
    };
    return all;
}

} // namespace loaderlens::bench
