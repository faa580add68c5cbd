// SPDX-License-Identifier: MIT
// What the job's cluster really counts and enforces: the SLURM configuration the recorder read
// inside the job (meta slurm_site_*, slurm_jobacct_gather_*, docs/slurm.md), or the report's
// --accounting. The diagnosis judges by the views in force first and shows the others as "if your
// site counted ...".
#pragma once

#include <map>
#include <optional>
#include <string>

namespace loaderlens {

struct SiteAccounting {
    // The SchedulerView key of what the site's SLURM counts (slurm_linux, slurm_usepss,
    // slurm_noshared, slurm_cgroup), or of what --accounting names (also cgroup_usage,
    // k8s_working_set); empty: not known (then every view is judged, as without a site).
    std::string view;
    // The site acts on that figure at the limit: jobacct_gather's OverMemoryKill kills the step
    // (or, for cgroup_usage and k8s_working_set, the kernel or the kubelet). False: SLURM records
    // it (sacct's MaxRSS) and nothing more.
    bool kills = false;
    // task/cgroup with ConstrainRAMSpace=yes: the kernel holds the step's cgroup to the limit.
    bool cgroup_enforced = false;
    // JobAcctGatherFrequency's task period (s); 0: polling off; empty: not known.
    std::optional<int> poll_s;
    std::string source;      // "scontrol show config", "SLURM_CONF FILE", "report --accounting"
    std::string unavailable; // why it is not known (empty when `view` is set or outside SLURM)
    std::string gather_type, gather_params; // as the site's configuration says
    bool known() const { return !view.empty(); }
};

// The --accounting names: linux, usepss, noshared, cgroup, k8s (advise's, and noshared).
std::optional<std::string> accounting_view_key(const std::string& name);
const char* accounting_names();

// From a recording's meta, or `override` (an --accounting view key) before it.
SiteAccounting site_accounting(const std::map<std::string, std::string>& meta,
                               const std::optional<std::string>& override_view = std::nullopt);

} // namespace loaderlens
