// SPDX-License-Identifier: MIT
#include "budget_file.hpp"

#include "commands.hpp"
#include "loaderlens/one_line.hpp"
#include "toml_nesting_scan.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <toml++/toml.h>
#include <vector>

namespace loaderlens::cli {

namespace {

const std::vector<std::string> scheduler_views{"slurm_linux",  "slurm_usepss", "slurm_noshared",
                                               "slurm_cgroup", "cgroup_usage", "k8s_working_set"};
const std::vector<std::string> process_figures{
    "rss", "rss_anon", "rss_file", "rss_shmem", "swap",          "pss",
    "uss", "pss_anon", "pss_file", "pss_shmem", "private_dirty", "swap_pss"};
const std::vector<std::string> growth_figures{"rss", "pss", "uss", "private_dirty", "rss_file"};

std::string listing(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

const char* type_name(const toml::node& node) {
    if (node.is_string()) return "a string";
    if (node.is_integer()) return "an integer";
    if (node.is_floating_point()) return "a float";
    if (node.is_boolean()) return "a boolean";
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    return "a date or time";
}

// The budget file being read: says where a problem is.
class Reader {
  public:
    explicit Reader(std::string path) : path_(std::move(path)) {}

    [[noreturn]] void fail(const toml::source_region& where, const std::string& key,
                           const std::string& problem) const {
        throw BudgetFileError(
            one_line(path_ + ":" + std::to_string(where.begin.line) + ": " + key + ": " + problem));
    }

    RuleOrigin origin(const toml::node& node) const {
        return {path_, static_cast<int>(node.source().begin.line)};
    }

    // Every key of `table` is one of `known` (a key of an array of tables is named with [i]).
    void only(const toml::table& table, const std::string& prefix,
              const std::vector<std::string>& known) const {
        for (auto&& [key, value] : table)
            if (std::find(known.begin(), known.end(), std::string(key.str())) == known.end())
                fail(key.source(), prefix + std::string(key.str()),
                     "unknown key (known here: " + listing(known) + ")");
    }

    const toml::table& table(const toml::node& node, const std::string& key) const {
        if (!node.is_table())
            fail(node.source(), key, std::string("expected a table, got ") + type_name(node));
        return *node.as_table();
    }

    // A size: bytes as an integer, or text with a unit ("4GiB", "512MiB", "4G"). In KiB.
    std::int64_t size_kb(const toml::node& node, const std::string& key) const {
        if (auto bytes = node.value_exact<std::int64_t>()) {
            if (*bytes < 0) fail(node.source(), key, "a size cannot be negative");
            return *bytes / 1024;
        }
        if (auto text = node.value_exact<std::string>()) {
            if (starts_like_a_number(*text))
                if (auto bytes = parse_size(*text)) return *bytes / 1024;
            fail(node.source(), key,
                 "'" + *text + "' is not a size (e.g. \"4GiB\", \"512MiB\", \"4G\")");
        }
        fail(node.source(), key,
             std::string("expected a size like \"4GiB\", got ") + type_name(node));
    }

    std::string text(const toml::node& node, const std::string& key) const {
        if (auto text = node.value_exact<std::string>()) return *text;
        fail(node.source(), key, std::string("expected a string, got ") + type_name(node));
    }

    std::int64_t integer(const toml::node& node, const std::string& key, std::int64_t low,
                         std::int64_t high) const {
        auto value = node.value_exact<std::int64_t>();
        if (!value)
            fail(node.source(), key, std::string("expected an integer, got ") + type_name(node));
        if (*value < low || *value > high)
            fail(node.source(), key,
                 std::to_string(*value) + " is out of range (" + std::to_string(low) + " to " +
                     std::to_string(high) + ")");
        return *value;
    }

    bool boolean(const toml::node& node, const std::string& key) const {
        if (auto value = node.value_exact<bool>()) return *value;
        fail(node.source(), key, std::string("expected true or false, got ") + type_name(node));
    }

    Role role(const toml::node& node, const std::string& key) const {
        const std::string name = text(node, key);
        if (auto role = role_from_string(name)) return *role;
        fail(node.source(), key, "'" + name + "' is not a role (main, worker, helper)");
    }

    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

void read_check(const Reader& in, const toml::table& t, Budget& b) {
    in.only(t, "check.", {"warmup", "warmup_epochs", "mem_limit", "skip_unavailable"});
    if (auto* n = t.get("warmup")) {
        const std::string text = in.text(*n, "check.warmup");
        const auto us = starts_like_a_number(text) ? parse_duration_us(text) : std::nullopt;
        if (!us)
            in.fail(n->source(), "check.warmup",
                    "'" + text + "' is not a duration (e.g. \"30s\", \"500ms\")");
        b.warmup_ms = *us / 1000;
    }
    if (auto* n = t.get("warmup_epochs"))
        b.warmup_epochs = static_cast<int>(in.integer(*n, "check.warmup_epochs", 0, 100000));
    if (auto* n = t.get("mem_limit")) b.mem_limit_kb = in.size_kb(*n, "check.mem_limit");
    if (auto* n = t.get("skip_unavailable"))
        b.skip_unavailable = in.boolean(*n, "check.skip_unavailable");
}

void read_schedulers(const Reader& in, const toml::table& t, Budget& b) {
    std::vector<std::string> known = scheduler_views;
    known.push_back("min_margin");
    in.only(t, "schedulers.", known);
    for (auto&& [key, value] : t) {
        const std::string name(key.str());
        if (name == "min_margin") {
            b.min_margin_kb = in.size_kb(value, "schedulers.min_margin");
            b.min_margin_origin = in.origin(value);
        } else {
            b.schedulers.push_back(
                {name, in.size_kb(value, "schedulers." + name), in.origin(value)});
        }
    }
}

void read_process(const Reader& in, const toml::table& t, const std::string& prefix, Budget& b) {
    std::vector<std::string> known = process_figures;
    known.insert(known.end(), {"role", "slot", "sum"});
    in.only(t, prefix, known);
    ProcessBudget p;
    p.origin = in.origin(t);
    if (auto* n = t.get("role")) p.role = in.role(*n, prefix + "role");
    if (auto* n = t.get("slot")) {
        if (p.role != Role::worker)
            in.fail(n->source(), prefix + "slot", "only workers have slots");
        p.slot = static_cast<int>(in.integer(*n, prefix + "slot", 0, 1 << 20));
    }
    if (auto* n = t.get("sum")) {
        p.sum = in.boolean(*n, prefix + "sum");
        if (p.sum && p.slot)
            in.fail(n->source(), prefix + "sum", "a sum over the workers has no slot");
    }
    for (auto&& [key, value] : t) {
        const std::string name(key.str());
        if (auto figure = std::find(process_figures.begin(), process_figures.end(), name);
            figure != process_figures.end())
            p.limits.push_back(
                {*figure_from_string(name), in.size_kb(value, prefix + name), in.origin(value)});
    }
    if (p.limits.empty())
        in.fail(t.source(), prefix.substr(0, prefix.size() - 1),
                "no figure to hold (" + listing(process_figures) + ")");
    b.processes.push_back(std::move(p));
}

void read_file(const Reader& in, const toml::table& t, const std::string& prefix, Budget& b) {
    in.only(t, prefix, {"path", "rss", "pss", "process_rss", "cached"});
    FileBudget f;
    f.origin = in.origin(t);
    auto* path = t.get("path");
    if (!path)
        in.fail(t.source(), prefix + "path",
                "missing (a glob such as \"*.npy\" or \"/data/train/*\")");
    f.pattern = in.text(*path, prefix + "path");
    if (auto* n = t.get("rss")) f.rss_kb = in.size_kb(*n, prefix + "rss");
    if (auto* n = t.get("pss")) f.pss_kb = in.size_kb(*n, prefix + "pss");
    if (auto* n = t.get("process_rss")) f.process_rss_kb = in.size_kb(*n, prefix + "process_rss");
    if (auto* n = t.get("cached")) f.cached_kb = in.size_kb(*n, prefix + "cached");
    if (!f.rss_kb && !f.pss_kb && !f.process_rss_kb && !f.cached_kb)
        in.fail(t.source(), prefix.substr(0, prefix.size() - 1),
                "no figure to hold (rss, pss, process_rss, cached)");
    b.files.push_back(std::move(f));
}

void read_growth(const Reader& in, const toml::table& t, Budget& b) {
    std::vector<std::string> known = growth_figures;
    known.push_back("role");
    in.only(t, "growth.", known);
    std::optional<Role> role;
    if (auto* n = t.get("role")) role = in.role(*n, "growth.role");
    for (auto&& [key, value] : t) {
        const std::string name(key.str());
        if (name == "role") continue;
        b.growth.push_back({name, role, in.size_kb(value, "growth." + name), in.origin(value)});
    }
}

void read_findings(const Reader& in, const toml::table& t, Budget& b) {
    in.only(t, "findings.", {"forbid", "max_severity"});
    if (auto* n = t.get("forbid")) {
        const toml::array* kinds = n->as_array();
        if (!kinds)
            in.fail(n->source(), "findings.forbid",
                    std::string("expected an array of finding kinds, got ") + type_name(*n));
        for (const toml::node& kind : *kinds) {
            const std::string name = in.text(kind, "findings.forbid");
            const auto& known = known_finding_kinds();
            if (std::find(known.begin(), known.end(), name) == known.end())
                in.fail(kind.source(), "findings.forbid",
                        "'" + name + "' is not a finding kind (" + listing(known) + ")");
            b.findings.forbidden.push_back({name, in.origin(kind)});
        }
    }
    if (auto* n = t.get("max_severity")) {
        const std::string name = in.text(*n, "findings.max_severity");
        for (Severity s : {Severity::critical, Severity::warning, Severity::info})
            if (name == to_string(s)) b.findings.max_severity = s;
        if (!b.findings.max_severity)
            in.fail(n->source(), "findings.max_severity",
                    "'" + name + "' is not a severity (info, warning, critical)");
        b.findings.severity_origin = in.origin(*n);
    }
}

void read_baseline(const Reader& in, const toml::table& t, Budget& b) {
    in.only(t, "baseline.", {"tolerance", "min_change"});
    if (auto* n = t.get("tolerance")) {
        const std::string text = in.text(*n, "baseline.tolerance");
        b.tolerance = parse_percent(text);
        if (!b.tolerance)
            in.fail(n->source(), "baseline.tolerance",
                    "'" + text + "' is not a percentage (e.g. \"10%\")");
    }
    if (auto* n = t.get("min_change")) b.min_change_kb = in.size_kb(*n, "baseline.min_change");
}

// [[process]] and [[file]]: an array of tables; one table alone ([process]) is taken too.
template <typename Read>
void each_table(const Reader& in, const toml::node& node, const std::string& key, Read read) {
    if (const toml::array* array = node.as_array()) {
        for (std::size_t i = 0; i < array->size(); ++i) {
            const std::string prefix = key + "[" + std::to_string(i) + "].";
            read(in.table((*array)[i], key + "[" + std::to_string(i) + "]"), prefix);
        }
        return;
    }
    read(in.table(node, key), key + ".");
}

// The whole file, or a one-line reason it cannot be a budget.
std::string budget_text(const std::string& path) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        throw BudgetFileError(one_line(path + ": is a directory, not a budget file"));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw BudgetFileError(one_line(path + ": cannot be read: " + std::strerror(errno)));
    std::string text(max_budget_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_budget_bytes)
        throw BudgetFileError(one_line(path + ": larger than " +
                                       std::to_string(max_budget_bytes >> 20) +
                                       " MiB, too large for a budget file (docs/check.md)"));
    return text;
}

} // namespace

std::optional<double> parse_percent(const std::string& text) {
    if (text.size() < 2 || text.back() != '%' || !starts_like_a_number(text)) return std::nullopt;
    try {
        std::size_t used = 0;
        const double value = std::stod(text.substr(0, text.size() - 1), &used);
        if (used != text.size() - 1 || value < 0 || value > 100000) return std::nullopt;
        return value / 100.0;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

Budget read_budget_file(const std::string& path) {
    const std::string content = budget_text(path);
    if (auto line = TomlNestingScan(content, max_budget_nesting).too_deep())
        throw BudgetFileError(one_line(path + ":" + std::to_string(*line) +
                                       ": nested deeper than " +
                                       std::to_string(max_budget_nesting) +
                                       " levels (tables, dotted keys, arrays; docs/check.md)"));
    toml::table root;
    try {
        root = toml::parse(content, path);
    } catch (const toml::parse_error& e) {
        const auto line = e.source().begin.line;
        throw BudgetFileError(one_line(path + (line ? ":" + std::to_string(line) : std::string()) +
                                       ": " + std::string(e.description())));
    }
    Reader in(path);
    Budget b;
    b.path = path;
    in.only(root, "", {"check", "schedulers", "process", "file", "growth", "findings", "baseline"});
    if (auto* n = root.get("check")) read_check(in, in.table(*n, "check"), b);
    if (auto* n = root.get("schedulers")) read_schedulers(in, in.table(*n, "schedulers"), b);
    if (auto* n = root.get("process"))
        each_table(in, *n, "process",
                   [&](const toml::table& t, const std::string& p) { read_process(in, t, p, b); });
    if (auto* n = root.get("file"))
        each_table(in, *n, "file",
                   [&](const toml::table& t, const std::string& p) { read_file(in, t, p, b); });
    if (auto* n = root.get("growth")) read_growth(in, in.table(*n, "growth"), b);
    if (auto* n = root.get("findings")) read_findings(in, in.table(*n, "findings"), b);
    if (auto* n = root.get("baseline")) read_baseline(in, in.table(*n, "baseline"), b);
    return b;
}

} // namespace loaderlens::cli
