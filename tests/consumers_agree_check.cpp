// SPDX-License-Identifier: MIT
// The consumers check's part for `check`: a budget with a rule for every figure the report
// shows (each limit far above it), and each rule's measured figure held to the report's.
#include "consumers_agree_compare.hpp"
#include "loaderlens/diagnosis.hpp"
#include "loaderlens/figure_text.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/units.hpp"
#include "support.hpp"

#include <fmt/format.h>
#include <set>
#include <string_view>

namespace loaderlens::test::consumers_agree {

namespace {

// A file's rule names it by a glob that matches the path alone: fnmatch's special characters
// escaped, and each U+FFFD (the report's JSON holds a byte that is not UTF-8 as one) matched by
// '?', one byte in check's C locale.
std::string glob_for_path(const std::string& path) {
    const std::string replacement = "\xef\xbf\xbd";
    std::string out;
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (path.compare(i, replacement.size(), replacement) == 0) {
            out += '?';
            i += replacement.size() - 1;
            continue;
        }
        if (std::string_view("*?[\\").find(path[i]) != std::string_view::npos) out += '\\';
        out += path[i];
    }
    return out;
}

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_string(const std::string& text) {
    std::string out = "\"";
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (ch == '"' || ch == '\\')
            out += std::string("\\") + ch;
        else if (c < 0x20 || c == 0x7f)
            out += fmt::format("\\u{:04x}", c);
        else
            out += ch;
    }
    return out + "\"";
}

} // namespace

std::string budget_for(const json& r, const ConsumersAgreeOptions& options,
                       const std::vector<json>& parts) {
    std::string out = "[check]\n";
    if (!options.mem_limit.empty()) out += "mem_limit = \"" + options.mem_limit + "\"\n";
    // min_margin must be a size above 0: a view over its limit fails that rule (exit 3), which
    // is fine here, only the figure it measured is compared.
    out += "[schedulers]\nmin_margin = \"1KiB\"\n";
    for (const json& v : r["schedulers"])
        if (!v["peak_kib"].is_null()) out += v["key"].get<std::string>() + " = \"1000TiB\"\n";
    for (const char* role : {"main", "worker"})
        out += fmt::format("[[process]]\nrole = \"{}\"\nrss = \"1000TiB\"\npss = \"1000TiB\"\n"
                           "uss = \"1000TiB\"\n",
                           role);
    std::set<std::string> files;
    auto add_files = [&](const json& report) {
        for (const json& f : report["files"])
            if (!is_shared_library(f["path"]) && files.insert(f["path"]).second)
                out += "[[file]]\npath = " + toml_string(glob_for_path(f["path"])) +
                       "\nrss = \"1000TiB\"\npss = \"1000TiB\"\n";
    };
    add_files(r);
    for (const json& part : parts)
        add_files(part);
    return out;
}

// `check` with that budget: each rule's measured figure is the report's.
void check_against(const Outputs& o, Compare& c) {
    const auto lines = lines_of(o.check);
    const json& r = o.report;
    for (const json& v : r["schedulers"]) {
        if (v["peak_kib"].is_null()) continue;
        const std::string key = v["key"];
        c.same("check " + key + " peak vs report", check_measured(lines, key + " peak"),
               size(v["peak_kib"]));
        // The margin judged: only the site's views where the site is known; for one of several
        // tasks of a step with its siblings found, the node sum's (docs/check.md, min_margin).
        if (!r["site"]["view"].is_null() && v["site_role"].is_null()) continue;
        const json& node = v["node"];
        const json& margin = node.is_object() && !node["counted_kib"].is_null() ? node["margin_kib"]
                                                                                : v["margin_kib"];
        if (!margin.is_null())
            c.same("check " + key + " margin vs report", check_measured(lines, key + " margin"),
                   margin_text(kib_of(margin)));
    }
    for (const char* role : {"main", "worker"})
        for (const char* figure : {"rss", "pss", "uss"}) {
            Kib highest;
            for (const json& p : r["processes"])
                if (p["role"] == role) {
                    const Kib v = kib_of(p[std::string("peak_") + figure]["kib"]);
                    if (v && (!highest || *v > *highest)) highest = v;
                }
            if (!highest) continue;
            const std::string name = std::string(role) + " " + figure;
            c.same("check " + name + " vs the report's highest process peak",
                   check_measured(lines, name), format_kib(highest));
        }
    for (const json& f : r["files"]) {
        const std::string path = f["path"];
        if (is_shared_library(path)) continue;
        // check names the rule by its pattern, printed as one line (one_line: the text outputs'
        // rule for names from outside).
        const std::string rule = one_line(glob_for_path(path));
        c.same("check " + path + " rss vs report file tree Σ RSS",
               check_measured(lines, rule + " rss"), size(f["tree_peak_rss"]["kib"]));
        c.same("check " + path + " pss vs report file tree Σ PSS",
               check_measured(lines, rule + " pss"), size(f["tree_peak_pss"]["kib"]));
    }
}

} // namespace loaderlens::test::consumers_agree
