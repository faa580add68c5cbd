// SPDX-License-Identifier: MIT
// The accounting mode in force, from the meta the recorder wrote inside a SLURM job.
#include "loaderlens/site_accounting.hpp"

#include "diagnosis_parts.hpp"
#include "loaderlens/advice.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace loaderlens {

namespace {

using diagnosis::meta_text;

// JobAcctGatherParams is a comma-separated list whose words SLURM compares without case.
bool has_param(const std::string& params, std::string_view word) {
    std::stringstream list(params);
    std::string item;
    while (std::getline(list, item, ',')) {
        std::erase_if(item, [](unsigned char c) { return std::isspace(c); });
        if (item.size() == word.size() &&
            std::equal(item.begin(), item.end(), word.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) ==
                       std::tolower(static_cast<unsigned char>(b));
            }))
            return true;
    }
    return false;
}

} // namespace

std::optional<std::string> accounting_view_key(const std::string& name) {
    if (name == "noshared") return "slurm_noshared";
    if (auto accounting = parse_accounting(name)) return view_key(*accounting);
    return std::nullopt;
}

const char* accounting_names() {
    return "linux, usepss, noshared, cgroup or k8s";
}

SiteAccounting site_accounting(const std::map<std::string, std::string>& meta,
                               const std::optional<std::string>& override_view) {
    SiteAccounting site;
    site.gather_type = meta_text(meta, "slurm_jobacct_gather_type");
    site.gather_params = meta_text(meta, "slurm_jobacct_gather_params");
    site.cgroup_enforced = meta_text(meta, "slurm_constrain_ram_space") == "yes";
    const std::string frequency = meta_text(meta, "slurm_jobacct_gather_frequency_s");
    int seconds = 0;
    if (!frequency.empty()) {
        auto [end, ec] =
            std::from_chars(frequency.data(), frequency.data() + frequency.size(), seconds);
        if (ec == std::errc{} && end == frequency.data() + frequency.size() && seconds >= 0)
            site.poll_s = seconds;
    }
    if (override_view) {
        site.view = *override_view;
        site.kills = true;
        site.source = "report --accounting";
        return site;
    }
    site.source = meta_text(meta, "slurm_site_source");
    if (site.source.empty()) {
        if (!meta_text(meta, "slurm_job_id").empty())
            site.unavailable = meta_text(meta, "slurm_site_unavailable").empty()
                                   ? "the recorder did not read the site's configuration"
                                   : meta_text(meta, "slurm_site_unavailable");
        return site;
    }
    const bool kill = has_param(site.gather_params, "OverMemoryKill");
    if (site.gather_type == "jobacct_gather/linux") {
        site.view = has_param(site.gather_params, "UsePss")     ? "slurm_usepss"
                    : has_param(site.gather_params, "NoShared") ? "slurm_noshared"
                                                                : "slurm_linux";
        site.kills = kill;
    } else if (site.gather_type == "jobacct_gather/cgroup") {
        site.view = "slurm_cgroup";
        site.kills = kill;
    } else {
        site.unavailable = site.gather_type.empty()
                               ? "the site's JobAcctGatherType is not in its configuration"
                               : site.gather_type + " records no memory figure";
    }
    // SLURM's default when the frequency is not set is 30 s (slurm.conf(5)).
    if (!site.poll_s && !site.view.empty()) site.poll_s = 30;
    return site;
}

} // namespace loaderlens
