// SPDX-License-Identifier: MIT
// What a SLURM site really applies to a job (docs/recording.md, "SLURM site"): the accounting
// plugin and its parameters, the polling period, the task plugin and cgroup constraint, and the
// step's own memory limit per node. Parsed here from `scontrol show config`, a slurm.conf and
// `scontrol show step J.S`, all pure functions over text that may be truncated or hostile; the
// reading itself (running scontrol) is in slurm_site_reader.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loaderlens {

// What a text said; a field it did not say is nullopt (never guessed).
struct SlurmSite {
    std::optional<std::string> jobacct_gather_type;         // "jobacct_gather/linux"
    std::optional<std::string> jobacct_gather_params;       // "UsePss,OverMemoryKill"; "" for none
    std::optional<std::int64_t> jobacct_gather_frequency_s; // task sampling; 0 = disabled
    std::optional<std::string> task_plugin;                 // "task/cgroup,task/affinity"
    std::optional<std::string> constrain_ram_space;         // "yes"/"no", from cgroup.conf
};

// The task sampling period in seconds of a JobAcctGatherFrequency value: "30", "task=30",
// "task=30,energy=0"; SLURM's default 30 when no task= is given (or "(null)"). Nothing for text
// that is not of that form.
std::optional<std::int64_t> parse_jobacct_gather_frequency(std::string_view value);

// `scontrol show config` (SLURM 22.05: "Key<spaces>= value" lines, a "Cgroup Support
// Configuration:" section with task/cgroup). Nothing when the text is not that output at all.
std::optional<SlurmSite> parse_scontrol_config(std::string_view text);

// A slurm.conf: Key=Value tokens, keys case-insensitive, '#' comments, the last setting wins.
// Keys it does not set take SLURM's documented defaults (jobacct_gather/none, "", 30 s,
// task/none) unless the file has Include lines, which are not followed: then they stay unknown.
struct SlurmConf {
    SlurmSite site;
    std::vector<std::string> includes; // the files of its Include lines, as written
};
SlurmConf parse_slurm_conf(std::string_view text);

// The step's own memory limit per node from `scontrol show step J.S` (TRES=...,mem=700M,...;
// units K M G T, none = M; divided by Nodes=), or why not.
struct SlurmStepLimit {
    std::optional<std::int64_t> mem_kb_per_node;
    std::string problem; // set when mem_kb_per_node is not
};
SlurmStepLimit parse_scontrol_step(std::string_view text, std::string_view step_id);

// A SLURM memory figure ("700M", "2G", "512", "1.5G") in KiB; nothing for anything else.
std::optional<std::int64_t> parse_slurm_mem_kb(std::string_view text);

// Everything read at record time, and why what is missing is missing.
struct SlurmSiteReading {
    std::optional<SlurmSite> site;
    std::string site_source;      // "scontrol show config", "SLURM_CONF /etc/slurm/slurm.conf"
    std::string site_unavailable; // one line, when there is no site
    std::optional<std::int64_t> step_mem_kb;
    std::string step_source;      // "scontrol show step 12.0"
    std::string step_unavailable; // one line, when there is no step_mem_kb
};

// The meta rows of a reading (keys slurm_site_*, slurm_jobacct_gather_*, slurm_task_plugin,
// slurm_constrain_ram_space, slurm_step_*), values made one line.
std::vector<std::pair<std::string, std::string>> slurm_site_meta(const SlurmSiteReading& reading);

} // namespace loaderlens
