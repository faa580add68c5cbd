// SPDX-License-Identifier: MIT
// The metric families loaderlens writes for Prometheus (docs/metrics.md), shared by the
// OpenMetrics export and the live textfile so that both name and explain a figure the same way:
// node_exporter drops a family whose HELP differs between two textfiles, silently.
#pragma once

#include "loaderlens/series.hpp"

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loaderlens::metrics {

// In the order they are written.
enum class Family {
    recording_info,
    recording_live,
    sample_timestamp,
    textfile_write_timestamp,
    recorder_rss,
    recorder_peak_rss,
    recorder_pss,
    recorder_rss_anon,
    process_rss,
    process_rss_anon,
    process_rss_file,
    process_rss_shmem,
    process_swap,
    process_pss,
    process_uss,
    process_pss_anon,
    process_pss_file,
    process_pss_shmem,
    process_private_dirty,
    tree_rss,
    tree_pss,
    tree_uss,
    scheduler,
    scheduler_peak,
    scheduler_limit,
    scheduler_counted,
    scheduler_counted_peak,
    cgroup_usage,
    cgroup_limit,
    file_rss,
    file_pss,
    file_cached,
    epoch,
    finding,
};
inline constexpr std::size_t family_count = static_cast<std::size_t>(Family::finding) + 1;

struct FamilySpec {
    std::string_view name; // with its unit as suffix (Prometheus naming conventions)
    std::string_view unit; // OpenMetrics # UNIT: "bytes", "seconds", or empty
    std::string_view help; // no backslash, quote or newline: the same text in both formats
};
const FamilySpec& spec(Family family);

// The per-process figures (fast and rollup tiers, series.hpp) and their families.
struct ProcessFigure {
    Figure figure;
    Family family;
};
inline constexpr std::array<ProcessFigure, 11> process_figures{{
    {Figure::rss, Family::process_rss},
    {Figure::rss_anon, Family::process_rss_anon},
    {Figure::rss_file, Family::process_rss_file},
    {Figure::rss_shmem, Family::process_rss_shmem},
    {Figure::swap, Family::process_swap},
    {Figure::pss, Family::process_pss},
    {Figure::uss, Family::process_uss},
    {Figure::pss_anon, Family::process_pss_anon},
    {Figure::pss_file, Family::process_pss_file},
    {Figure::pss_shmem, Family::process_pss_shmem},
    {Figure::private_dirty, Family::process_private_dirty},
}};

// The tree sums (series.hpp's Σ per tick) and their families.
inline constexpr std::array<ProcessFigure, 3> tree_figures{{
    {Figure::rss, Family::tree_rss},
    {Figure::pss, Family::tree_pss},
    {Figure::uss, Family::tree_uss},
}};

using Labels = std::vector<std::pair<std::string, std::string>>;

// The labels every series of a recording carries, from its meta: node (host), slurm_job,
// slurm_step, slurm_task (SLURM_JOB_ID, SLURM_STEP_ID, SLURM_PROCID; empty outside SLURM).
Labels recording_labels(const std::map<std::string, std::string>& meta);
// `base` and more.
Labels with(Labels base, std::initializer_list<std::pair<std::string, std::string>> more);
// A process's labels: role, and slot ("" for main and helpers).
Labels process_labels(const Labels& base, Role role, int slot);

// A figure in KiB as bytes; nothing for an unavailable one.
std::optional<std::string> bytes(const Kib& kib);

// Unix milliseconds as seconds with three decimals ("1764150000.125").
std::string seconds(std::int64_t unix_ms);

// A recording's wall-clock start (meta start_unix_ns) in ms since the epoch; nothing without it.
std::optional<std::int64_t> start_unix_ms(const std::map<std::string, std::string>& meta);

} // namespace loaderlens::metrics
