// SPDX-License-Identifier: MIT
#include "loaderlens/check_report.hpp"

#include "loaderlens/figure_text.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/utf8.hpp"

#include <fmt/format.h>

namespace loaderlens {

namespace {

std::string at_text(const RuleResult& r) {
    if (!r.at_ms) return {};
    return fmt::format("at {:.1f} s", static_cast<double>(*r.at_ms) / 1000.0);
}

std::string origin_text(const RuleOrigin& o) {
    if (o.file.empty()) return {};
    return o.line > 0 ? fmt::format("{}:{}", o.file, o.line) : o.file;
}

// The rule's verdict as a word: an unavailable figure is a failure unless the budget skips it.
std::string verdict(const RuleResult& r, bool skip_unavailable) {
    if (r.status == RuleStatus::unavailable) return skip_unavailable ? "SKIP" : "FAIL";
    return to_string(r.status);
}

// What the rule measured against what it allows, in one line without the verdict.
std::string rule_line(const RuleResult& r) {
    std::string line = r.measured;
    // A margin reads as the report's and the dashboard's: "over by 51.6 MiB" when negative,
    // never "-52828 KiB below the limit".
    if (r.group == "schedulers" && r.name.ends_with(" margin") && r.measured_kb)
        line = margin_text(r.measured_kb);
    if (r.status == RuleStatus::unavailable) {
        line += " (" + r.detail + ")";
    } else if (!r.limit.empty()) {
        std::string limit = r.limit;
        if (r.status == RuleStatus::fail && limit.starts_with("<= ")) limit.replace(0, 2, ">");
        if (r.status == RuleStatus::fail && limit.starts_with(">= ")) limit.replace(0, 2, "<");
        line += "  " + limit;
    }
    if (!r.where.empty()) line += "  " + r.where;
    if (const std::string at = at_text(r); !at.empty()) line += "  " + at;
    return line;
}

std::string summary(const CheckRun& run) {
    const auto& rules = run.outcome.rules;
    const int failed = run.outcome.failed(run.skip_unavailable);
    int skipped = 0;
    for (const RuleResult& r : rules)
        if (r.status == RuleStatus::unavailable && run.skip_unavailable) ++skipped;
    std::string against;
    if (!run.budget_file.empty()) against = "budget " + run.budget_file;
    if (!run.baseline.empty())
        against += (against.empty() ? "" : " and ") + ("baseline " + run.baseline);
    std::string out = fmt::format(
        "check: {} rule{}, {} passed, {} failed{} ({} against {}; warm-up: {})", rules.size(),
        rules.size() == 1 ? "" : "s", static_cast<int>(rules.size()) - failed - skipped, failed,
        skipped ? fmt::format(", {} skipped", skipped) : "", one_line(run.recording),
        one_line(against), run.outcome.warmup_note);
    if (run.command_failure) out += "\ncheck: the command " + *run.command_failure;
    return out + "\n";
}

// XML 1.0 cannot hold control characters other than tab, newline and carriage return, not even
// as character references: they become U+FFFD, as bytes that are not UTF-8 do (utf8_step; an XML
// reader refuses a file that is not well-formed UTF-8).
std::string xml_text(const std::string& text, bool attribute) {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const Utf8Step step = utf8_step(text, i);
        const char c = text[i];
        const auto u = static_cast<unsigned char>(c);
        if (!step.well_formed) {
            out += replacement_character;
        } else if (step.length > 1) {
            out.append(text, i, step.length);
        } else {
            switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += attribute ? "&quot;" : "\"";
                break;
            case '\n':
                out += attribute ? "&#10;" : "\n";
                break; // a raw newline in an attribute is read as a space
            case '\t':
                out += attribute ? "&#9;" : "\t";
                break;
            default:
                if (u < 0x20 || u == 0x7f)
                    out += replacement_character;
                else
                    out += c;
            }
        }
        i += step.length;
    }
    return out;
}

} // namespace

std::string render_check_text(const CheckRun& run) {
    std::string out;
    std::size_t group_width = 5, name_width = 4;
    for (const RuleResult& r : run.outcome.rules) {
        group_width = std::max(group_width, one_line(r.group).size());
        name_width = std::max(name_width, one_line(r.name).size());
    }
    for (const RuleResult& r : run.outcome.rules)
        out += fmt::format("{:<5} {:<{}}  {:<{}}  {}\n", verdict(r, run.skip_unavailable),
                           one_line(r.group), group_width, one_line(r.name), name_width,
                           one_line(rule_line(r)));
    return out + summary(run);
}

std::string render_junit(const CheckRun& run) {
    const auto& rules = run.outcome.rules;
    int failures = run.command_failure ? 1 : 0, skipped = 0;
    for (const RuleResult& r : rules) {
        if (r.status == RuleStatus::fail ||
            (r.status == RuleStatus::unavailable && !run.skip_unavailable))
            ++failures;
        if (r.status == RuleStatus::unavailable && run.skip_unavailable) ++skipped;
    }
    const std::size_t tests = rules.size() + (run.command_failure ? 1 : 0);
    const double seconds = static_cast<double>(run.duration_ms) / 1000.0;
    const std::string suite = "loaderlens check " + run.recording;
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuites name=\"loaderlens check\" tests=\"{}\" failures=\"{}\" "
                       "errors=\"0\" skipped=\"{}\" time=\"{:.3f}\">\n",
                       tests, failures, skipped, seconds);
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
                       "skipped=\"{}\" time=\"{:.3f}\">\n",
                       xml_text(suite, true), tests, failures, skipped, seconds);
    out += "    <properties>\n";
    for (const auto& [name, value] :
         {std::pair<std::string, std::string>{"recording", run.recording},
          {"budget", run.budget_file},
          {"baseline", run.baseline},
          {"warmup", run.outcome.warmup_note}})
        if (!value.empty())
            out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name,
                               xml_text(value, true));
    out += "    </properties>\n";
    if (run.command_failure) {
        const std::string message = "the command " + *run.command_failure;
        out += fmt::format(
            "    <testcase classname=\"loaderlens.command\" name=\"command succeeded\" "
            "time=\"{:.3f}\">\n      <failure message=\"{}\" type=\"command\">{}</failure>\n"
            "    </testcase>\n",
            seconds, xml_text(message, true), xml_text(message, false));
    }
    for (const RuleResult& r : rules) {
        std::string file =
            r.origin.file.empty() ? "" : fmt::format(" file=\"{}\"", xml_text(r.origin.file, true));
        if (r.origin.line > 0) file += fmt::format(" line=\"{}\"", r.origin.line);
        out += fmt::format("    <testcase classname=\"loaderlens.{}\" name=\"{}\"{} time=\"0\"",
                           xml_text(r.group, true), xml_text(r.name, true), file);
        const std::string line = rule_line(r);
        // GitLab shows the body, Jenkins the message as details and the body as the trace: both
        // hold the line, the body also where the rule was written.
        std::string body =
            verdict(r, run.skip_unavailable) + " " + r.group + " " + r.name + ": " + line;
        if (const std::string origin = origin_text(r.origin); !origin.empty())
            body += "\nbudget rule: " + origin;
        if (r.status == RuleStatus::pass) {
            out += fmt::format(">\n      <system-out>{}</system-out>\n    </testcase>\n",
                               xml_text(body, false));
        } else if (r.status == RuleStatus::unavailable && run.skip_unavailable) {
            out += fmt::format(">\n      <skipped message=\"{}\">{}</skipped>\n    </testcase>\n",
                               xml_text(line, true), xml_text(body, false));
        } else {
            out += fmt::format(
                ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                xml_text(line, true), r.status == RuleStatus::fail ? "budget" : "unavailable",
                xml_text(body, false));
        }
    }
    out += "  </testsuite>\n</testsuites>\n";
    return out;
}

} // namespace loaderlens
