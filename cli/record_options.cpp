// SPDX-License-Identifier: MIT
#include "record_options.hpp"

#include "loaderlens/worker_rule.hpp"
#include "numeric_option.hpp"
#include "output_name.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace loaderlens::cli {

namespace {

constexpr double min_cpu_budget = 0.001;
// 2^40 KiB (1 PiB): beyond any file, and far from overflowing once turned into bytes.
constexpr std::int64_t max_maps_min_kb = std::int64_t{1} << 40;

// A tier interval: at least 1 ms (and at most a day, see parse_duration_us).
std::optional<std::int64_t> parse_duration_ms(const std::string& text) {
    auto us = parse_duration_us(text);
    if (!us || *us < 1000) return std::nullopt;
    return *us / 1000;
}

bool apply_intervals(const std::vector<std::string>& specs, SessionOptions& options) {
    for (const std::string& spec : specs) {
        std::size_t eq = spec.find('=');
        auto ms = eq == std::string::npos ? std::nullopt : parse_duration_ms(spec.substr(eq + 1));
        std::string tier = spec.substr(0, eq);
        std::int64_t* target = tier == "fast"        ? &options.fast_ms
                               : tier == "rollup"    ? &options.rollup_ms
                               : tier == "maps"      ? &options.maps_ms
                               : tier == "cgroup"    ? &options.cgroup_ms
                               : tier == "residency" ? &options.residency_ms
                                                     : nullptr;
        if (!target || !ms) {
            print_error("--interval " + spec +
                        ": expected TIER=DURATION with TIER one of fast, "
                        "rollup, maps, cgroup, residency and DURATION like 100ms or 2s");
            return false;
        }
        *target = *ms;
    }
    return true;
}

std::optional<double> parse_budget(const std::string& text) {
    if (!starts_like_a_number(text)) return std::nullopt;
    try {
        std::size_t used = 0;
        double value = std::stod(text, &used);
        if (text.substr(used) == "%")
            value /= 100;
        else if (used != text.size())
            return std::nullopt;
        // Below 0.1% a tier's interval (its cost divided by its share of the budget) would
        // stretch past any recording's length, and past what an int64 of milliseconds holds.
        if (!std::isfinite(value) || value < min_cpu_budget || value > 1) return std::nullopt;
        return value;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// Whether `path` is a file the residency tier can follow; the reason when it is not.
std::optional<std::string> residency_file_problem(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return "not a regular file";
    return std::nullopt;
}

bool residency_options_from(const RecordOptions& o, ResidencyOptions& residency) {
    residency.buckets = o.residency_buckets;
    auto min_size = parse_size(o.residency_min_size);
    if (!min_size) {
        print_error("--residency-min-size " + o.residency_min_size +
                    ": expected a size like 1MiB, 64KiB or 4096");
        return false;
    }
    residency.min_size_bytes = *min_size;
    for (const std::string& file : o.residency_files) {
        if (auto problem = residency_file_problem(file)) {
            print_error("--file " + file + ": " + *problem);
            return false;
        }
        // Absolute, so the recording names it wherever it is read.
        residency.files.push_back(std::filesystem::absolute(file).lexically_normal().string());
    }
    if (o.residency_method != "cachestat" && o.residency_method != "mincore") {
        print_error("--residency-method " + o.residency_method +
                    ": expected cachestat (falls back to mincore) or mincore");
        return false;
    }
    residency.cache_method =
        o.residency_method == "mincore" ? CacheMethod::mincore : CacheMethod::cachestat;
    return true;
}

} // namespace

bool session_options_from(const RecordOptions& o, SessionOptions& session_options) {
    if (!apply_intervals(o.intervals, session_options)) return false;
    auto budget = parse_budget(o.cpu_budget);
    if (!budget) {
        print_error("--cpu-budget " + o.cpu_budget +
                    ": expected a share of one core from 0.1% to 100%, like 5% or 0.05");
        return false;
    }
    session_options.cpu_budget = *budget;
    // 0 reads every process at every rollup sample; at most a minute (a longer one hides too
    // much of what a sharer outside the tree does).
    const auto max_age_us = parse_duration_us(o.pss_max_age);
    if (!max_age_us || *max_age_us > 60'000'000) {
        print_error("--pss-max-age " + o.pss_max_age +
                    ": expected a duration from 0 to 60s, like 5s or 500ms");
        return false;
    }
    session_options.pss_max_age_ms = *max_age_us / 1000;
    if (!o.mem_limit.empty() && !parse_size(o.mem_limit)) {
        print_error("--mem-limit " + o.mem_limit + ": expected a size like 4GiB, 4G or 4096MiB");
        return false;
    }
    session_options.maps_min_file_kb = o.maps_min_kb;
    if (!residency_options_from(o, session_options.residency)) return false;
    if (o.worker_match) {
        // The pattern is not repeated: it may be long (WorkerMatch bounds it).
        if (auto problem = WorkerMatch::problem(*o.worker_match)) {
            print_error("--worker-match: " + *problem);
            return false;
        }
    }
    return true;
}

void add_recording_options(CLI::App* sub, RecordOptions& options) {
    sub->add_option("-o,--output", options.output,
                    "Recording file; %j SLURM job id, %s step id, %t task id, %a array task id, "
                    "%N node name, %p recorder PID, %% a % (default: " +
                        default_output_pattern() + ")");
    auto* force = sub->add_flag("-f,--force", options.force, "Overwrite an existing recording");
    auto* no_clobber = sub->add_flag(
        "--no-clobber", options.no_clobber,
        "Refuse (exit 2) when the recording exists; by default the next free name is taken");
    force->excludes(no_clobber);
    sub->add_option("--interval", options.intervals,
                    "TIER=DURATION, e.g. fast=100ms rollup=1s maps=5s cgroup=1s residency=1s (the "
                    "defaults)");
    sub->add_option("--cpu-budget", options.cpu_budget, "Recorder CPU budget, share of one core")
        ->capture_default_str();
    sub->add_option("--pss-max-age", options.pss_max_age,
                    "Keep a PSS reading while the tree stands still, at most this long (0: read "
                    "every sample)")
        ->capture_default_str();
    sub->add_option("--mem-limit", options.mem_limit,
                    "The job's memory limit (e.g. 4GiB), kept in the recording: the report's "
                    "margins use it before SLURM's --mem and the cgroup's limit");
    add_whole_number_option<std::int64_t>(
        sub, "--maps-min-size", options.maps_min_kb, 0, max_maps_min_kb,
        "Files with less resident (KiB) are summed into one 'other' row per process");
    add_whole_number_option(sub, "--residency-buckets", options.residency_buckets, 1, 65536,
                            "Residency: buckets along each file (heatmap rows)");
    sub->add_option("--residency-min-size", options.residency_min_size,
                    "Residency: follow mapped files at least this big")
        ->capture_default_str();
    sub->add_option("--file", options.residency_files,
                    "Residency: also follow this file, mapped or not (repeatable)");
    sub->add_option("--residency-method", options.residency_method,
                    "Residency: cachestat (falls back to mincore on kernels before 6.5) or mincore")
        ->capture_default_str();
    sub->add_option("--metrics-textfile", options.metrics_textfile,
                    "DIR/NAME.prom: rewrite it every second with the latest figures per role and "
                    "worker slot for node_exporter's textfile collector; %j %s %t %N %p as in -o "
                    "(docs/metrics.md)");
    sub->add_flag("-q,--quiet", options.quiet, "No status line and no closing message");
}

} // namespace loaderlens::cli
