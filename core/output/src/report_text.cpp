// SPDX-License-Identifier: MIT
#include "json_util.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/text_layout.hpp"
#include "loaderlens/units.hpp"
#include "report_format.hpp"

#include <charconv>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <sys/wait.h>

namespace loaderlens {

namespace report_format {

std::string kib(const Kib& value) {
    return format_kib(value);
}

std::string seconds(std::int64_t ms) {
    return fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0);
}

TreeShape tree_shape(const ReportData& r) {
    TreeShape shape;
    for (const auto& p : r.processes) {
        if (p.info.role == Role::worker) {
            ++shape.workers;
            shape.slots = std::max(shape.slots, std::int64_t{p.info.slot} + 1);
            shape.generations = std::max(shape.generations, std::int64_t{p.info.generation} + 1);
        } else if (p.info.role == Role::helper) {
            ++shape.helpers;
        }
    }
    return shape;
}

} // namespace report_format

namespace {

// Under the processes line: what the scans could not see (docs/recording.md, "Processes missed").
std::string missed_line(const ProcessesMissed& m) {
    if (!m.unavailable.empty())
        return fmt::format("  missed     unknown: processes born and gone between two scans are "
                           "not counted ({})\n",
                           one_line(m.unavailable));
    if (*m.missed == 0 && !m.at_least)
        return fmt::format("  missed     none: every process born in the tree was recorded "
                           "({} births, counted by the kernel's process events)\n",
                           *m.born);
    return fmt::format("  missed     {}{} of {} processes born in the tree exited between two "
                       "scans and are not recorded (counted by the kernel's process events{})\n",
                       m.at_least ? "at least " : "", *m.missed, *m.born,
                       m.at_least ? "; some events were lost" : "");
}

using namespace report_format;

std::string short_kib(const Kib& value) {
    return format_kib(value, SizeStyle::compact);
}

std::string peak(const Peak& p) {
    return p.value ? fmt::format("{} at {}", kib(p.value), seconds(p.t_ms)) : "n/a";
}

std::string meta(const ReportData& r, const std::string& key, const std::string& fallback = "?") {
    auto it = r.meta.find(key);
    return it == r.meta.end() ? fallback : one_line(it->second);
}

std::string start_time(const ReportData& r) {
    std::time_t t = static_cast<std::time_t>(r.start_unix_ns.value_or(0) / 1'000'000'000);
    char text[32] = {};
    std::tm tm{};
    if (!gmtime_r(&t, &tm)) return "?"; // a year beyond int: a damaged start_unix_ns
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return text;
}

// How a process ended. One whose exit was not seen was running when the recorder last looked:
// at the end of a finished recording; in a cut one, all that is known is when it was last seen.
std::string exit_text(const ProcessSummary& s, const ReportData& r) {
    const ProcessInfo& p = s.info;
    if (!p.exit_ms) {
        if (r.end.state == RecordingEnd::State::being_written) return "running";
        if (r.end.state == RecordingEnd::State::finished) return "running at the end";
        return s.last_seen_ms ? "last seen at " + seconds(*s.last_seen_ms) + ", then cut"
                              : "never sampled, then cut";
    }
    if (!p.exit_status) return "exit not seen";
    if (WIFSIGNALED(*p.exit_status)) return fmt::format("killed {}", WTERMSIG(*p.exit_status));
    return fmt::format("exit {}", WEXITSTATUS(*p.exit_status));
}

// How the recording ended when it did not finish, and a lost -wal: right below the title.
void append_end(std::string& out, const ReportData& r) {
    const RecordingEnd& e = r.end;
    const std::string last =
        e.last_sample_ms < 0 ? "no sample recorded" : "last sample at " + seconds(e.last_sample_ms);
    if (e.state == RecordingEnd::State::being_written)
        out += fmt::format("Recording still being written by loaderlens PID {} on this host: {}\n",
                           e.writer_pid.value_or(0),
                           e.last_sample_ms < 0 ? "no sample yet" : "figures up to the " + last);
    if (e.state == RecordingEnd::State::cut) {
        std::string signal =
            "no signal came first (killed outright, e.g. SIGKILL from SLURM's OverMemoryKill or "
            "the OOM killer)";
        if (e.signal)
            signal =
                *e.signal + " received " +
                (e.signal_ms ? "at " + seconds(*e.signal_ms) : "first (its time not recorded)");
        // A write that failed for lack of space stops the recorder without a signal.
        if (e.file_system_full)
            signal += "; the file system holding it is full now: a write that failed for lack of "
                      "space stops the recorder";
        out += fmt::format("Recording cut: the recorder stopped without finishing; {}; {}\n", last,
                           signal);
    }
    if (!r.missing_wal.empty()) {
        const std::string name = std::filesystem::path(r.path).filename().string();
        out += fmt::format("Warning: {} is missing: the newest data of this recording may be in "
                           "it; copy {}-wal (and {}-shm) along with {}\n",
                           r.missing_wal, name, name, name);
    }
}

void append_header(std::string& out, const ReportData& r) {
    const auto [workers, helpers, slots, generations] = tree_shape(r);
    std::string state = r.finished ? meta(r, "state")
                        : r.end.state == RecordingEnd::State::being_written
                            ? "NOT FINISHED (still being written)"
                            : "NOT FINISHED (cut: the recorder stopped without finishing)";
    out += "Recording\n";
    out += fmt::format("  command    {}\n", meta(r, "command"));
    out += fmt::format("  host       {} (Linux {}), started {}, {} recorded, {}", meta(r, "host"),
                       meta(r, "kernel"), start_time(r), seconds(r.duration_ms), state);
    if (r.meta.count("exit_status")) out += ", exit status " + meta(r, "exit_status");
    if (r.meta.count("stop_reason")) out += ", stopped by " + meta(r, "stop_reason");
    out += "\n";
    out += fmt::format(
        "  processes  {} in all: {} main, {} workers in {} slots ({} generation{}), {} helpers\n",
        r.processes.size(), r.processes.size() - workers - helpers, workers, slots, generations,
        generations == 1 ? "" : "s", helpers);
    out += missed_line(r.processes_missed);
    std::string tiers;
    for (const auto& t : r.tiers) {
        tiers += fmt::format("{}{} every {} ms", tiers.empty() ? "" : ", ", t.tier, t.nominal_ms);
        if (t.longest_ms > t.nominal_ms)
            tiers += fmt::format(" (stretched up to {} ms by the CPU budget)", t.longest_ms);
    }
    out += fmt::format("  sampling   {}\n", tiers);
    for (const auto& t : r.tiers)
        if (t.kept_rows > 0)
            out += fmt::format("  PSS kept   {} of {} PSS readings repeated while the tree stood "
                               "still (no fault, no move), the oldest {:.1f} s old "
                               "(docs/figures.md)\n",
                               t.kept_rows, t.rows, static_cast<double>(t.oldest_kept_ms) / 1000);
    for (const auto& t : r.tiers)
        if (t.composite_rows > 0)
            out += fmt::format("  PSS composite {} of {} PSS readings: the data files' share "
                               "computed from pagemap at the sample, the rest from a smaps_rollup "
                               "reading up to {:.1f} s old (docs/figures.md)\n",
                               t.composite_rows, t.rows,
                               static_cast<double>(t.oldest_composite_ms) / 1000);
    out += "\n";
}

void append_totals(std::string& out, const ReportData& r) {
    const auto& t = r.totals;
    out += "Tree totals (peak of the sum over all processes of the tree)\n";
    // Two columns that fit in 80: the figure's peak, then what it counts.
    out +=
        fmt::format("  Σ RSS   {:<22} resident pages, shared ones once per process\n", peak(t.rss));
    out += fmt::format("          {:<22} (what SLURM's jobacct_gather/linux sums)\n", "");
    out += fmt::format("  Σ PSS   {:<22} shared pages split among their sharers\n", peak(t.pss));
    out += fmt::format("  Σ USS   {:<22} pages private to one process\n", peak(t.uss));
    if (t.rollup_unreadable > 0)
        out +=
            fmt::format("          (partial: PSS and USS of {} process{} could not be read and are "
                        "left out; see Unavailable)\n",
                        t.rollup_unreadable, t.rollup_unreadable == 1 ? "" : "es");
    std::string limit = t.cgroup_unlimited ? "no limit"
                        : t.cgroup_limit   ? "limit " + kib(t.cgroup_limit)
                                           : "limit n/a";
    if (!t.cgroup_version.empty())
        out += fmt::format("  cgroup  {:<22} everything charged to it, page cache too\n"
                           "          {} {} ({})\n",
                           peak(t.cgroup_usage), t.cgroup_version, one_line(t.cgroup_path), limit);
    else
        out += "  cgroup  n/a (no readable memory cgroup: see Unavailable)\n";
    if (const auto& c = r.diagnosis.cgroup_at_peak)
        out +=
            fmt::format("          at its peak: anon {}, active file {}, inactive file {}, shmem "
                        "{}; {} before the command started\n",
                        kib(c->anon), kib(c->active_file), kib(c->inactive_file), kib(c->shmem),
                        kib(r.diagnosis.cgroup_before_kb));
    if (t.oom_kills && *t.oom_kills > 0)
        out += fmt::format("  OOM kills in the cgroup: {}\n", *t.oom_kills);
    // A partial Σ PSS would make the ratio meaningless.
    if (t.rss.value && t.pss.value && *t.pss.value > 0 && t.rollup_unreadable == 0) {
        const double ratio = static_cast<double>(*t.rss.value) / static_cast<double>(*t.pss.value);
        if (ratio >= 1.5)
            out += fmt::format(
                "  -> Σ RSS is {:.1f}x Σ PSS: pages shared between processes (mapped files, "
                "copy-on-write, shared memory) are counted once per process by RSS.\n",
                ratio);
    }
    // What the gap is made of, each cause by its measured share (docs/findings.md).
    const Diagnosis& d = r.diagnosis;
    if (d.gap_total_kb && *d.gap_total_kb > 0 && !d.gap.empty()) {
        out += fmt::format("  -> Σ RSS - Σ PSS was {} at {}; it is made of:\n", kib(d.gap_total_kb),
                           seconds(d.gap_ms));
        for (const GapShare& g : d.gap)
            out += fmt::format("       {:>10} {:>4.0f}%  {}\n", kib(g.gap_kb),
                               100.0 * static_cast<double>(g.gap_kb) /
                                   static_cast<double>(*d.gap_total_kb),
                               one_line(g.cause == "file" ? g.what : g.cause + ": " + g.what));
    }
    out += "\n";
}

// A final PSS carried from an older reading (kept while the tree stood still) with its age:
// "2.9M (0.4s)".
std::string final_pss(const ProcessSummary& p) {
    if (!p.final_pss || p.final_pss_age_ms <= 0) return short_kib(p.final_pss);
    return fmt::format("{} ({:.1f}s)", short_kib(p.final_pss),
                       static_cast<double>(p.final_pss_age_ms) / 1000.0);
}

// "0.3-2.3s": birth to exit; "end" (running at the end) or "cut" (the recording was).
std::string lifetime(const ProcessInfo& i, bool cut) {
    return fmt::format("{:.1f}-{}",
                       static_cast<double>(std::max<std::int64_t>(0, i.birth_ms)) / 1000.0,
                       i.exit_ms ? fmt::format("{:.1f}s", static_cast<double>(*i.exit_ms) / 1000.0)
                                 : std::string(cut ? "cut" : "end"));
}

// A terminal narrower than the wide table: each process on two lines, the peaks first.
void append_processes_narrow(std::string& out, const ReportData& r) {
    out += "Processes (peak of each figure; then the finals: ANON, FILE, SHMEM split the final "
           "RSS; a final PSS kept from an earlier reading shows how old it is, (0.4s))\n";
    out += fmt::format("  {:>3} {:>7} {:<16} {:<11} {:>8} {:>8} {:>8}\n", "ID", "PID", "ROLE",
                       "LIFETIME", "RSS", "PSS", "USS");
    const bool cut = r.end.state == RecordingEnd::State::cut;
    for (const auto& p : r.processes) {
        const auto& i = p.info;
        const std::string life = lifetime(i, cut);
        out += fmt::format("  {:>3} {:>7} {:<16} {:<11} {:>8} {:>8} {:>8}\n", i.id, i.key.pid,
                           process_label(i), life, short_kib(p.rss.value), short_kib(p.pss.value),
                           short_kib(p.uss.value));
        out += fmt::format("      final RSS {} PSS {} USS {}; ANON {} FILE {} SHMEM {}; {} [{}]\n",
                           short_kib(p.final_rss), final_pss(p), short_kib(p.final_uss),
                           short_kib(p.final_anon), short_kib(p.final_file),
                           short_kib(p.final_shmem), i.comm, exit_text(p, r));
    }
    out += "\n";
}

void append_processes(std::string& out, const ReportData& r, std::size_t width) {
    // The wide table takes 130 columns and more.
    if (width > 0 && width < 150) {
        append_processes_narrow(out, r);
        return;
    }
    out += "Processes (peak / final of each figure; ANON, FILE, SHMEM split the final RSS; a final "
           "PSS kept from an earlier reading shows how old it is, (0.4s))\n";
    out += fmt::format("  {:>3} {:>7} {:<17} {:<13} {:^17} {:^23} {:^17}\n", "", "", "", "", "RSS",
                       "PSS", "USS");
    out +=
        fmt::format("  {:>3} {:>7} {:<17} {:<13} {:>8} {:>8} {:>8} {:>14} {:>8} {:>8} {:>7} {:>7} "
                    "{:>7}  {}\n",
                    "ID", "PID", "ROLE", "LIFETIME", "peak", "final", "peak", "final", "peak",
                    "final", "ANON", "FILE", "SHMEM", "COMM [END]");
    const bool cut = r.end.state == RecordingEnd::State::cut;
    for (const auto& p : r.processes) {
        const auto& i = p.info;
        const std::string life = lifetime(i, cut);
        out +=
            fmt::format("  {:>3} {:>7} {:<17} {:<13} {:>8} {:>8} {:>8} {:>14} {:>8} {:>8} {:>7} "
                        "{:>7} {:>7}  {} [{}]\n",
                        i.id, i.key.pid, process_label(i), life, short_kib(p.rss.value),
                        short_kib(p.final_rss), short_kib(p.pss.value), final_pss(p),
                        short_kib(p.uss.value), short_kib(p.final_uss), short_kib(p.final_anon),
                        short_kib(p.final_file), short_kib(p.final_shmem), i.comm, exit_text(p, r));
    }
    out += "\n";
}

void append_files(std::string& out, const ReportData& r) {
    out += "Mapped files (per process: peak RSS and PSS of the file; tree: peak of the sums)\n";
    if (!r.files_unavailable.empty()) {
        // Never "none" for a tree whose mappings could not be seen.
        const auto n = r.files_unavailable.size();
        out += fmt::format("  {}: smaps of {} process{} could not be read ({}){}\n",
                           r.files.empty() ? "unavailable" : "partial", n, n == 1 ? "" : "es",
                           one_line(r.files_unavailable.front().reason),
                           r.files.empty() ? "" : "; what they mapped is left out");
    } else if (r.files.empty()) {
        out += "  none above the --maps-min-size threshold\n";
    }
    // Shared libraries in one line: real reports ran 154-240 lines, mostly libraries of main.
    std::int64_t library_rss = 0, library_pss = 0;
    std::vector<std::string> libraries;
    for (const auto& f : r.files) {
        const std::string& path = f.object.path;
        if (is_shared_library(path)) {
            library_rss = saturating_add(library_rss, f.total_rss.value.value_or(0));
            library_pss = saturating_add(library_pss, f.total_pss.value.value_or(0));
            libraries.push_back(path.substr(path.rfind('/') + 1));
            continue;
        }
        std::string size =
            f.object.size_bytes ? kib(*f.object.size_bytes / 1024) : std::string("size n/a");
        out += fmt::format("  {}  ({}{})\n", one_line(f.object.path), size,
                           f.object.kind == MappingKind::deleted_file ? ", deleted" : "");
        out +=
            fmt::format("      tree: Σ RSS {}, Σ PSS {}\n", peak(f.total_rss), peak(f.total_pss));
        for (const auto& per : f.processes) {
            const ProcessInfo* p = find_process(r.processes, per.process_id);
            std::string who = p ? fmt::format("{} pid {}", process_label(*p), p->key.pid) : "?";
            out += fmt::format("      {:<30} RSS {:>10}  PSS {:>10}\n", who, kib(per.rss.value),
                               kib(per.pss.value));
        }
    }
    if (!libraries.empty()) {
        std::string names;
        for (std::size_t i = 0; i < libraries.size() && i < 4; ++i)
            names += (i ? ", " : "") + libraries[i];
        if (libraries.size() > 4) names += ", ...";
        out += fmt::format("  shared libraries: {} files, Σ RSS {}, Σ PSS {} (sums of each one's "
                           "peak; largest first: {})\n",
                           libraries.size(), kib(library_rss), kib(library_pss), names);
    }
    out += "\n";
}

// The reference loader's own account of its run (`loaderlens replay`).
void append_loader(std::string& out, const ReportData& r) {
    const LoaderRun& run = r.loader;
    if (run.empty()) return;
    const auto config = json_util::loader_config(run.config_json);
    auto get = [&](const char* key) -> std::string {
        if (!config.is_object() || !config.contains(key)) return "?";
        const auto& value = config[key];
        return value.is_string() ? value.get<std::string>() : value.dump();
    };
    auto bytes = [](std::int64_t b) { return format_kib(b / 1024); };
    // A size in the config: "n/a" unless it is a whole number (never 0 for what is not there).
    auto config_bytes = [&](const char* key) {
        const std::string text = get(key);
        std::int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        return error == std::errc{} && end == text.data() + text.size() ? bytes(value)
                                                                        : std::string("n/a");
    };
    out += "Loader (the reference loader's own counters, from loaderlens replay)\n";
    out += fmt::format("  dataset   {}: {} records of {}, {}\n", get("description"), get("records"),
                       config_bytes("record_bytes"), get("dataset"));
    out += fmt::format("  run       {}, {} worker{} ({}), batch {}{}, prefetch {}, {}\n",
                       get("pattern"), get("workers"), get("workers") == "1" ? "" : "s",
                       get("persistent") == "true" ? "persistent" : "re-forked each epoch",
                       get("batch"), get("drop_last") == "true" ? " (drop last)" : "",
                       get("prefetch"), get("reader"));
    std::string extras;
    if (get("pin") == "true") extras += ", pinned staging " + config_bytes("pin_staging_bytes");
    if (get("cow_heap_mib") != "0") extras += ", copy-on-read heap " + get("cow_heap_mib") + " MiB";
    if (get("reopen_each_epoch") == "true") extras += ", reopened each epoch";
    out += fmt::format("  buffers   batch buffers {} in /dev/shm{}\n",
                       config_bytes("batch_ring_bytes"), extras);
    // No status yet: the loader is still running (its account so far), or it never said.
    const std::string status = !run.status.empty() ? run.status
                               : r.end.state == RecordingEnd::State::being_written
                                   ? "running (epochs so far)"
                                   : "unknown";
    out += fmt::format("  status    {}{}\n", status,
                       run.message.empty() ? "" : ": " + one_line(run.message));
    out += "    EPOCH GEN    START DURATION SAMPLES BATCHES SAMPLES/S   MiB/s       READ\n";
    for (const LoaderEpoch& e : run.epochs) {
        out += fmt::format("    {:>5} {:>3} {:>8} {:>8} {:>7} {:>7} {:>9.0f} {:>7.1f} {:>10}\n",
                           e.epoch, e.generation, seconds(e.start_ms),
                           seconds(saturating_sub(e.end_ms, e.start_ms)), e.samples, e.batches,
                           e.samples_per_second(), e.mib_per_second(), bytes(e.bytes_read));
    }
    out += "\n";
}

void append_rest(std::string& out, const ReportData& r) {
    if (!r.markers.empty()) {
        out += "Markers\n";
        for (const auto& m : r.markers)
            out += fmt::format("  {:>9}  {}\n", seconds(m.t_ms), one_line(m.text));
        out += "\n";
    }
    if (!r.unavailable.empty()) {
        out += "Unavailable figures (shown as n/a above)\n";
        for (const auto& [t, u] : r.unavailable) {
            const ProcessInfo* p = find_process(r.processes, u.process_id);
            out += fmt::format("  {:>9}  {} {}: {}\n", seconds(t), u.tier,
                               p ? fmt::format("pid {}", p->key.pid) : std::string("(tree)"),
                               one_line(u.reason));
        }
        out += "\n";
    }
    out += "Sources (docs/figures.md)\n"
           "  RSS /proc/PID/statm; ANON, FILE, SHMEM /proc/PID/status\n"
           "  PSS, USS /proc/PID/smaps_rollup; files /proc/PID/smaps\n"
           "  cgroup memory.current or memory.usage_in_bytes\n"
           "  page cache cachestat(2) or mincore(2); present pages /proc/PID/pagemap\n";
}

} // namespace

std::string render_report_text(const ReportData& r) {
    return render_report_text(r, TextLayout{});
}

std::string render_report_text(const ReportData& r, const TextLayout& layout) {
    std::string out;
    if (r.merged) {
        append_merged(out, r, layout.width);
    } else {
        // How the recording ended, when it did not finish, and a lost -wal: under the title.
        std::string notices;
        append_end(notices, r);
        append_first_screen(out, r, layout.width, notices);
        append_header(out, r);
        append_scheduler_details(out, r);
        append_totals(out, r);
        append_timelines(out, r);
        append_epochs(out, r, layout.width);
        append_findings(out, r);
        append_processes(out, r, layout.width);
        append_files(out, r);
        append_residency(out, r);
        append_loader(out, r);
        append_rest(out, r);
    }
    out = fit_to_width(out, layout.width);
    return layout.color ? colorize_report(out) : out;
}

} // namespace loaderlens
