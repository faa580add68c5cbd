// SPDX-License-Identifier: MIT
#include "loaderlens/slurm_site.hpp"

#include "loaderlens/one_line.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace loaderlens {

namespace {

// A stored value is at most this long: a site's parameter list is short, and hostile text must
// not fill the meta table.
constexpr std::size_t max_value = 256;

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

bool equal_nocase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && lower(a) == lower(b);
}

std::optional<std::int64_t> whole_number(std::string_view s) {
    std::int64_t value = 0;
    if (s.empty() || s.size() > 12) return std::nullopt;
    auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (error != std::errc{} || end != s.data() + s.size() || value < 0) return std::nullopt;
    return value;
}

std::string bounded(std::string_view value) {
    return std::string(value.substr(0, max_value));
}

// Splits `text` into lines and calls `each` with every one.
template <typename F> void for_each_line(std::string_view text, F each) {
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        each(text.substr(0, end));
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
    }
}

// Applies one key (any case) and its value to `site`.
void apply(SlurmSite& site, std::string_view key, std::string_view value, bool null_is_empty) {
    const std::string k = lower(key);
    if (null_is_empty && value == "(null)") value = "";
    if (k == "jobacctgathertype")
        site.jobacct_gather_type = bounded(value);
    else if (k == "jobacctgatherparams")
        site.jobacct_gather_params = bounded(value);
    else if (k == "jobacctgatherfrequency")
        site.jobacct_gather_frequency_s = parse_jobacct_gather_frequency(value);
    else if (k == "taskplugin")
        site.task_plugin = bounded(value);
    else if (k == "constrainramspace") {
        const std::string v = lower(value);
        if (v == "yes" || v == "no") site.constrain_ram_space = v;
    }
}

} // namespace

std::optional<std::int64_t> parse_jobacct_gather_frequency(std::string_view value) {
    value = trim(value);
    if (value.empty() || value == "(null)") return 30;
    if (auto plain = whole_number(value)) return plain;
    std::optional<std::int64_t> task;
    if (value.back() == ',') return std::nullopt;
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        const std::string_view item = value.substr(0, comma);
        const std::size_t equals = item.find('=');
        if (equals == std::string_view::npos || trim(item.substr(0, equals)).empty())
            return std::nullopt;
        const auto seconds = whole_number(trim(item.substr(equals + 1)));
        if (!seconds) return std::nullopt;
        if (equal_nocase(trim(item.substr(0, equals)), "task")) task = seconds;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return task ? task : 30;
}

std::optional<SlurmSite> parse_scontrol_config(std::string_view text) {
    if (!text.starts_with("Configuration data as of")) return std::nullopt;
    SlurmSite site;
    bool in_cgroup = false;
    for_each_line(text, [&](std::string_view line) {
        if (trim(line) == "Cgroup Support Configuration:") in_cgroup = true;
        const std::size_t equals = line.find(" = ");
        if (equals == std::string_view::npos) return;
        const std::string_view key = trim(line.substr(0, equals));
        // ConstrainRAMSpace only from the cgroup section: the same name elsewhere is not it.
        if (!in_cgroup && equal_nocase(key, "ConstrainRAMSpace")) return;
        apply(site, key, trim(line.substr(equals + 3)), true);
    });
    return site;
}

SlurmConf parse_slurm_conf(std::string_view text) {
    SlurmConf conf;
    SlurmSite& site = conf.site;
    for_each_line(text, [&](std::string_view line) {
        line = trim(line.substr(0, line.find('#')));
        std::size_t space = line.find_first_of(" \t");
        if (space != std::string_view::npos && equal_nocase(line.substr(0, space), "include")) {
            conf.includes.push_back(bounded(trim(line.substr(space))));
            return;
        }
        while (!line.empty()) {
            space = line.find_first_of(" \t");
            std::string_view token = line.substr(0, space);
            line = space == std::string_view::npos ? std::string_view{} : trim(line.substr(space));
            const std::size_t equals = token.find('=');
            if (equals == std::string_view::npos) continue;
            std::string_view value = token.substr(equals + 1);
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
                value = value.substr(1, value.size() - 2);
            apply(site, token.substr(0, equals), value, false);
        }
    });
    if (conf.includes.empty()) {
        // SLURM's defaults (slurm.conf(5), 22.05) for what the file does not set.
        if (!site.jobacct_gather_type) site.jobacct_gather_type = "jobacct_gather/none";
        if (!site.jobacct_gather_params) site.jobacct_gather_params = "";
        if (!site.jobacct_gather_frequency_s) site.jobacct_gather_frequency_s = 30;
        if (!site.task_plugin) site.task_plugin = "task/none";
    }
    return conf;
}

std::optional<std::int64_t> parse_slurm_mem_kb(std::string_view text) {
    if (text.empty() || text.size() > 24) return std::nullopt;
    double factor = 1024; // no unit: MiB
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (const std::size_t at = std::string_view("KMGT").find(unit); at != std::string_view::npos) {
        factor = std::pow(1024.0, static_cast<double>(at));
        text.remove_suffix(1);
    }
    if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
        }))
        return std::nullopt;
    double value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    const double kib = std::round(value * factor);
    if (!(kib >= 0) || kib > 9.0e15) return std::nullopt;
    return static_cast<std::int64_t>(kib);
}

SlurmStepLimit parse_scontrol_step(std::string_view text, std::string_view step_id) {
    std::optional<std::string_view> id, tres;
    std::optional<std::int64_t> nodes;
    for_each_line(text, [&](std::string_view line) {
        for (line = trim(line); !line.empty();) {
            const std::size_t space = line.find_first_of(" \t");
            const std::string_view token = line.substr(0, space);
            line = space == std::string_view::npos ? std::string_view{} : trim(line.substr(space));
            // The first step shown only: scontrol shows one for J.S.
            if (token.starts_with("StepId=") && !id)
                id = token.substr(7);
            else if (token.starts_with("Nodes=") && !nodes)
                nodes = whole_number(token.substr(6));
            else if (token.starts_with("TRES=") && !tres)
                tres = token.substr(5);
        }
    });
    SlurmStepLimit limit;
    if (!id) {
        limit.problem = "no StepId in scontrol's answer";
        return limit;
    }
    if (*id != step_id) {
        limit.problem = "scontrol showed step " + bounded(*id) + ", not " + std::string(step_id);
        return limit;
    }
    std::optional<std::int64_t> mem_kb;
    std::optional<std::int64_t> tres_nodes;
    for (std::string_view rest = tres.value_or(""); !rest.empty();) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        if (item.starts_with("mem=")) mem_kb = parse_slurm_mem_kb(item.substr(4));
        if (item.starts_with("node=")) tres_nodes = whole_number(item.substr(5));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    if (!nodes) nodes = tres_nodes;
    if (!mem_kb)
        limit.problem = "the step's TRES has no memory figure (no --mem for the step?)";
    else if (!nodes || *nodes <= 0)
        limit.problem = "the step's node count is not shown";
    else
        limit.mem_kb_per_node = *mem_kb / *nodes;
    return limit;
}

std::vector<std::pair<std::string, std::string>> slurm_site_meta(const SlurmSiteReading& r) {
    std::vector<std::pair<std::string, std::string>> rows;
    auto add = [&](const char* key, const std::string& value) {
        rows.emplace_back(key, one_line(value));
    };
    if (r.site) {
        add("slurm_site_source", r.site_source);
        const SlurmSite& s = *r.site;
        if (s.jobacct_gather_type) add("slurm_jobacct_gather_type", *s.jobacct_gather_type);
        if (s.jobacct_gather_params) add("slurm_jobacct_gather_params", *s.jobacct_gather_params);
        if (s.jobacct_gather_frequency_s)
            add("slurm_jobacct_gather_frequency_s", std::to_string(*s.jobacct_gather_frequency_s));
        if (s.task_plugin) add("slurm_task_plugin", *s.task_plugin);
        if (s.constrain_ram_space) add("slurm_constrain_ram_space", *s.constrain_ram_space);
    } else {
        add("slurm_site_unavailable", r.site_unavailable);
    }
    if (r.step_mem_kb) {
        add("slurm_step_mem_kb", std::to_string(*r.step_mem_kb));
        add("slurm_step_source", r.step_source);
    } else {
        add("slurm_step_unavailable", r.step_unavailable);
    }
    return rows;
}

} // namespace loaderlens
