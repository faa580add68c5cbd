// SPDX-License-Identifier: MIT
// The text report of a merged recording: which parts, how their clocks were aligned, a row per
// part with each scheduler view's peak and margin, the job's totals, and where each part's own
// report is (`report --part NAME`).
#include "loaderlens/merged_report.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/units.hpp"
#include "report_format.hpp"

#include <fmt/format.h>

namespace loaderlens {

namespace {

using report_format::kib;
using report_format::seconds;

// Short column names for the per-part table, in the views' order.
const char* short_name(const std::string& key) {
    if (key == "slurm_linux") return "SUM RSS";
    if (key == "slurm_usepss") return "SUM PSS";
    if (key == "slurm_noshared") return "NOSHARED";
    if (key == "slurm_cgroup") return "SLURM CG";
    if (key == "cgroup_usage") return "CG USAGE";
    if (key == "k8s_working_set") return "K8S WS";
    return "?";
}

// "1.20G/+2.8G": the peak and the margin to its limit (none: the peak alone).
std::string peak_and_margin(const SchedulerView& v) {
    if (!v.peak) return "n/a";
    std::string out = format_kib(v.peak, SizeStyle::compact);
    if (v.margin_kb)
        out += *v.margin_kb < 0
                   ? "/-" + format_kib(saturating_sub(0, *v.margin_kb), SizeStyle::compact)
                   : "/+" + format_kib(v.margin_kb, SizeStyle::compact);
    return out;
}

std::string ids(const RecordingPart& p) {
    std::string out;
    if (!p.step.empty()) out += "step " + p.step;
    if (!p.task.empty()) out += (out.empty() ? "task " : ", task ") + p.task;
    return out.empty() ? "-" : out;
}

void append_clocks(std::string& out, const MergedReport& m) {
    const RecordingPart& first = m.parts.front().part;
    std::string later;
    for (const PartReport& p : m.parts) {
        if (&p.part == &first) continue;
        later +=
            fmt::format("{}{} started {:.3f} s after {}", later.empty() ? "" : ", ", p.part.name,
                        static_cast<double>(p.part.offset_ms) / 1000.0, first.name);
        if (later.size() > 400) {
            later += ", ...";
            break;
        }
    }
    out += fmt::format("  clocks     aligned on each recording's wall-clock start "
                       "(meta start_unix_ns){}{}; inter-node clock skew is not measured (NTP)\n",
                       later.empty() ? "" : "; ", later);
}

} // namespace

void append_merged(std::string& out, const ReportData& r, std::size_t width) {
    // The wide tables take 100 to 150 columns: a narrower terminal gets each row on two lines.
    const bool narrow = width > 0 && width < 150;
    const MergedReport& m = *r.merged;
    auto meta = [&r](const char* key) {
        auto it = r.meta.find(key);
        return it == r.meta.end() ? std::string() : it->second;
    };
    out += fmt::format("loaderlens report: {}\n", one_line(r.path));
    const std::string job = meta("slurm_job_id");
    out += fmt::format("  merged     a merge of {} recording{}{} by loaderlens merge, {} from the "
                       "first start to the last end\n",
                       m.parts.size(), m.parts.size() == 1 ? "" : "s",
                       job.empty() ? "" : " of SLURM job " + job, seconds(r.duration_ms));
    if (m.parts.empty()) return;
    append_clocks(out, m);

    out += "\nParts (start on the job's axis; peak/margin to the part's own limit; "
           "`report --part NAME` for a part's report)\n";
    std::string header = fmt::format("  {:<16} {:<14} {:>9} {:>9} {:<8}", "PART", "STEP/TASK",
                                     "START", "DURATION", "END");
    for (const SchedulerView& v : m.parts.front().report.diagnosis.schedulers)
        header += fmt::format(" {:>13}", short_name(v.key));
    if (!narrow)
        out += header + "\n";
    else
        out += fmt::format("  {:<16} {:<14} {:>9} {:>9} {:<8}\n", "PART", "STEP/TASK", "START",
                           "DURATION", "END");
    for (const PartReport& p : m.parts) {
        std::string row = fmt::format("  {:<16} {:<14} {:>9} {:>9} {:<8}", p.part.name, ids(p.part),
                                      "+" + seconds(p.part.offset_ms), seconds(p.part.duration_ms),
                                      p.part.end_state);
        std::string views;
        for (const SchedulerView& v : p.report.diagnosis.schedulers)
            views += narrow ? fmt::format("{}{} {}", views.empty() ? "" : ", ", short_name(v.key),
                                          peak_and_margin(v))
                            : fmt::format(" {:>13}", peak_and_margin(v));
        out += narrow ? row + "\n      " + views + "\n" : row + views + "\n";
    }
    for (const PartReport& p : m.parts) {
        const auto& findings = p.report.diagnosis.findings;
        if (findings.empty()) continue;
        out += fmt::format("  {}: [{}] {}{}\n", one_line(p.part.name),
                           to_string(findings.front().severity), one_line(findings.front().title),
                           findings.size() > 1
                               ? fmt::format(" (and {} more finding{})", findings.size() - 1,
                                             findings.size() == 2 ? "" : "s")
                               : std::string());
    }

    out += "\nJob totals (the sum over the parts at each tick of any part, each part with its "
           "latest value while it ran; limits hold per node, not for the sum)\n";
    if (narrow)
        out += fmt::format("  {:<38} {:>10} {:>9}\n", "VIEW", "PEAK", "AT");
    else
        out += fmt::format("  {:<38} {:>10} {:>9}  {:<26} {}\n", "VIEW", "PEAK", "AT",
                           "FIRST PART TO PEAK", "HIGHEST PART");
    for (const JobTotal& t : m.totals) {
        if (!t.view.peak) {
            out += fmt::format("  {:<38} {:>10}  ({})\n", t.view.name, "n/a", t.view.unavailable);
            continue;
        }
        const std::string first =
            fmt::format("{} at {}", t.first_peak_part, seconds(t.first_peak_ms));
        const std::string highest = fmt::format("{} ({})", t.highest_part, kib(t.highest_kb));
        if (narrow)
            out +=
                fmt::format("  {:<38} {:>10} {:>9}\n      first part to peak: {}; highest "
                            "part: {}\n",
                            t.view.name, kib(t.view.peak), seconds(t.view.peak_ms), first, highest);
        else
            out += fmt::format("  {:<38} {:>10} {:>9}  {:<26} {}\n", t.view.name, kib(t.view.peak),
                               seconds(t.view.peak_ms), first, highest);
    }
    std::size_t findings = 0;
    for (const PartReport& p : m.parts)
        findings += p.report.diagnosis.findings.size();
    out += fmt::format("\n{} finding{} in all; each part's in its own report "
                       "(`loaderlens report --part NAME {}`)\n",
                       findings, findings == 1 ? "" : "s", r.path);
}

} // namespace loaderlens
