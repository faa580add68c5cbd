// SPDX-License-Identifier: MIT
// The text report's diagnosis: the verdict (findings, most severe first), what each scheduler
// counts against the limit, the findings' evidence, the slots over time as sparklines, and the
// epochs with each slot's growth.
#include "loaderlens/figure_text.hpp"
#include "loaderlens/one_line.hpp"
#include "report_format.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

namespace loaderlens {

namespace {

using report_format::kib;
using report_format::seconds;

std::string signed_kib(const Kib& value) {
    if (!value) return "n/a";
    return *value < 0 ? "-" + kib(saturating_sub(0, *value)) : kib(*value);
}

// What the site counts, where that was read, or why it is not known.
void append_site(std::string& out, const Diagnosis& d) {
    const SiteAccounting& s = d.site;
    if (s.known() && s.source == "report --accounting")
        out += fmt::format("  Judged as --accounting says the site counts: {} first; the "
                           "others: if your site counted them\n",
                           s.view);
    else if (s.known())
        out += fmt::format("  The site counts as {} says: JobAcctGatherType {}, "
                           "JobAcctGatherParams {}{}: its figure first (KILLS: it acts at the "
                           "limit; RECORDS: sacct's MaxRSS only); the others: if your site "
                           "counted them\n",
                           s.source, s.gather_type,
                           s.gather_params.empty() ? "(none)" : s.gather_params,
                           s.poll_s ? fmt::format(", polled every {} s", *s.poll_s) : "");
    else if (!s.unavailable.empty())
        out += fmt::format("  The site's accounting is not known ({}): every view is judged; "
                           "`report --accounting {}` names it\n",
                           s.unavailable, accounting_names());
}

// Under a view of one of several tasks on the node: their sum, SLURM's figure.
void append_node_sum(std::string& out, const SchedulerView& v) {
    const SchedulerView::NodeSum& n = *v.node;
    if (!n.counted_kb) {
        out += fmt::format("      Σ over the {} tasks of the step on this node: {} of them "
                           "recorded beside this one, the sum is not known\n",
                           n.tasks, n.recorded);
        return;
    }
    out += fmt::format("    {:<22} {:>10} {:>7} {:>10} {:>10} {:>11}\n",
                       fmt::format("Σ over {} tasks", n.tasks), kib(n.peak), seconds(n.peak_ms),
                       kib(n.recorders_kb), kib(n.counted_kb),
                       n.margin_kb ? signed_size_text(n.margin_kb) : std::string("-"));
    out += fmt::format("      Σ over the {} tasks on this node: SLURM holds this sum to the "
                       "step's limit\n",
                       n.tasks);
}

void append_schedulers(std::string& out, const Diagnosis& d) {
    append_site(out, d);
    out += d.limit.kb
               ? fmt::format("  Against the limit {} from {}\n", kib(d.limit.kb), d.limit.source)
               : "  No limit known: give one with `report --mem-limit SIZE`, or record "
                 "inside a SLURM job with --mem\n";
    // COUNTED is what the scheduler holds against the limit (the peak plus the recorder, a
    // process of the step): the figure the margin and the verdict's limit finding are about.
    out += fmt::format("    {:<22} {:>10} {:>7} {:>10} {:>10} {:>11}\n", "VIEW", "PEAK", "AT",
                       "+RECORDER", "=COUNTED", "MARGIN");
    for (const SchedulerView& v : d.schedulers) {
        const std::string role = !d.site.known()              ? ""
                                 : v.site_role == "enforced"  ? "KILLS: "
                                 : v.site_role == "accounted" ? "RECORDS: "
                                                              : "if counted: ";
        if (!v.peak) {
            out += fmt::format("    {:<22} {:>10}  ({})\n      {}{}: {}\n", v.short_name, "n/a",
                               v.unavailable, role, v.name, v.counts);
            continue;
        }
        const std::string recorder = v.recorder_in_figure ? "included"
                                     : v.recorder_kb      ? kib(v.recorder_kb)
                                                          : "n/a";
        std::string margin = v.margin_kb ? signed_size_text(v.margin_kb) : std::string("-");
        if (v.margin_kb && v.limit.source != d.limit.source) margin += "*";
        out +=
            fmt::format("    {:<22} {:>10} {:>7} {:>10} {:>10} {:>11}\n", v.short_name, kib(v.peak),
                        seconds(v.peak_ms), recorder, kib(scheduler_counted_kb(v)), margin);
        // The full name, the site's role and what it sums under the row: the table stays in 80.
        out += fmt::format("      {}{}: {}{}\n", role, v.name, v.counts,
                           v.samples < 3 ? fmt::format(" (from {} sample{} only)", v.samples,
                                                       v.samples == 1 ? "" : "s")
                                         : std::string());
        if (v.node) append_node_sum(out, v);
        if (v.polled && v.polled->likely_kb)
            out += fmt::format("      SLURM's polls every {} s most likely saw {} ({}..{} by "
                               "where they fell){}\n",
                               v.polled->period_s, kib(v.polled->likely_kb), kib(v.polled->low_kb),
                               kib(v.polled->high_kb),
                               v.limit.kb ? fmt::format(": over the limit at {} of {} poll "
                                                        "phases",
                                                        v.polled->phases_over, v.polled->phases)
                                          : std::string());
    }
    for (const SchedulerView& v : d.schedulers)
        if (v.margin_kb && v.limit.source != d.limit.source) {
            out += fmt::format("    * against the cgroup's own limit {} ({})\n", kib(v.limit.kb),
                               v.limit.source);
            break;
        }
    if (!d.recorder_peak_rss_kb)
        out +=
            "    the recorder's own size is unavailable (it was killed before it first wrote it)\n";
    const SchedulerView* rss = d.view("slurm_linux");
    const SchedulerView* pss = d.view("slurm_usepss");
    if (rss && pss && rss->interval_ms > 0 && pss->interval_ms > 0)
        out += fmt::format("    sampled: RSS every {} ms at most, PSS every {} ms at most: a spike "
                           "shorter than that can be missed ({})\n",
                           rss->interval_ms, pss->interval_ms,
                           d.site.poll_s && d.site.source != "report --accounting"
                               ? fmt::format("SLURM polls every {} s on this site: "
                                             "JobAcctGatherFrequency, {}",
                                             *d.site.poll_s, d.site.source)
                               : std::string("SLURM polls at JobAcctGatherFrequency, 30 s unless "
                                             "the site sets it"));
    const bool polled = std::any_of(d.schedulers.begin(), d.schedulers.end(),
                                    [](const SchedulerView& v) { return v.polled.has_value(); });
    if (d.site.poll_s && *d.site.poll_s > 0 && !polled)
        out += fmt::format("    the run was shorter than two of SLURM's polls ({} s apart): what "
                           "SLURM recorded of it is a poll at the step's end or an sstat's, "
                           "wherever they fell\n",
                           *d.site.poll_s);
    if (d.cgroup_before_kb)
        out += fmt::format("    the cgroup held {} at its first sample, before the command had "
                           "done much: the cgroup views include it{}\n",
                           kib(d.cgroup_before_kb),
                           d.limit.source.starts_with("--mem-limit") && d.view("cgroup_usage") &&
                                   !d.view("cgroup_usage")->limit.kb
                               ? " (half of it or more: not the job's own cgroup, so not held "
                                 "against --mem-limit)"
                               : "");
}

// Eight levels from the lowest to the highest block; a space where nothing was sampled.
std::string sparkline(const std::vector<Kib>& columns, std::int64_t top) {
    static const char* const levels[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    std::string line;
    for (const Kib& v : columns) {
        if (!v) {
            line += " ";
            continue;
        }
        const double share = top > 0 ? static_cast<double>(*v) / static_cast<double>(top) : 0;
        line += levels[static_cast<int>(std::clamp(share * 8, 0.0, 7.0))];
    }
    return line;
}

Kib highest(const std::vector<Kib>& columns) {
    Kib top;
    for (const Kib& v : columns)
        if (v) top = std::max(top.value_or(0), *v);
    return top;
}

} // namespace

void append_scheduler_details(std::string& out, const ReportData& r) {
    out += "Scheduler views in full (peak, when, the recorder's share, what each counts)\n";
    append_schedulers(out, r.diagnosis);
    out += "\n";
}

void append_findings(std::string& out, const ReportData& r) {
    const Diagnosis& d = r.diagnosis;
    if (d.findings.empty()) return;
    out += "Findings\n";
    int n = 0;
    for (const Finding& f : d.findings) {
        out += fmt::format("  {}. [{}] {}  ({})\n", ++n, to_string(f.severity), one_line(f.title),
                           f.kind);
        for (const std::string& e : f.evidence)
            out += "       - " + one_line(e) + "\n";
        out += "       -> " + one_line(f.advice) + "\n";
    }
    out += "\n";
}

void append_timelines(std::string& out, const ReportData& r) {
    const Diagnosis& d = r.diagnosis;
    if (d.timelines.empty()) return;
    const std::size_t columns = d.timelines.front().rss.size();
    out += fmt::format("Over time (0 to {}; each row scaled to its own highest value, shown at "
                       "the right; blank: not sampled; ' marks epoch ends)\n",
                       seconds(r.duration_ms));
    std::string ticks(columns, ' ');
    for (const Epoch& e : d.epochs) {
        const std::int64_t span = std::max<std::int64_t>(1, r.duration_ms);
        const double at = static_cast<double>(e.end_ms) * static_cast<double>(columns) /
                          (static_cast<double>(span) + 1);
        const auto c =
            static_cast<std::size_t>(std::clamp(at, 0.0, static_cast<double>(columns) - 1));
        ticks[c] = '\'';
    }
    if (!d.epochs.empty()) out += fmt::format("  {:<9} {:<4} {}\n", "epochs", "", ticks);
    // Many slots: RSS and PSS only (USS is in the epochs table and the JSON), so that a
    // 32-worker report stays readable.
    const bool many = d.timelines.size() > 9;
    for (const SlotTimeline& t : d.timelines) {
        const struct {
            const char* name;
            const std::vector<Kib>& columns;
        } rows[] = {{"RSS", t.rss}, {"PSS", t.pss}, {"USS", t.uss}};
        bool first = true;
        for (const auto& row : rows) {
            if (many && &row.columns == &t.uss) continue;
            const Kib top = highest(row.columns);
            std::string note = top ? kib(top) : std::string("n/a");
            if (&row.columns == &t.pss && t.samples_pss > 0 && t.samples_pss < 3)
                note += fmt::format(" (from {} sample{})", t.samples_pss,
                                    t.samples_pss == 1 ? "" : "s");
            out += fmt::format("  {:<9} {:<4} {} {}\n", first ? t.label : "", row.name,
                               sparkline(row.columns, top.value_or(0)), note);
            first = false;
        }
    }
    out += "\n";
}

void append_epochs(std::string& out, const ReportData& r, std::size_t width) {
    const Diagnosis& d = r.diagnosis;
    if (d.epochs.empty()) {
        out += "Epochs: not known (no epoch markers, no worker generations): growth is judged "
               "over time. Mark them with loaderlens.torch.track(loader) (docs/python.md), or "
               "each epoch's end with one line of Python at its last batch:\n"
               "  open(os.environ[\"LOADERLENS_MARKERS\"], \"a\").write(f\"epoch {epoch} end\\n\")"
               "\n\n";
        return;
    }
    // Many epochs: the first and the last ones, as many as the width holds (without a width:
    // all up to eight, else the first three and the last three).
    std::size_t columns = 8;
    if (width > 0) columns = std::clamp<std::size_t>(width > 38 ? (width - 38) / 10 : 2, 2, 8);
    const std::size_t side =
        d.epochs.size() <= columns ? d.epochs.size() : std::min<std::size_t>(3, columns / 2);
    std::vector<std::size_t> shown;
    for (std::size_t i = 0; i < d.epochs.size(); ++i)
        if (d.epochs.size() <= columns || i < side || i + side >= d.epochs.size())
            shown.push_back(i);
    const bool all = shown.size() == d.epochs.size();
    out += fmt::format(
        "Epochs ({}, from {}): each slot's figures at {} epoch's end{}\n", d.epochs.size(),
        d.epochs_source, all ? "every" : "each shown",
        all ? "" : fmt::format(" (the first and last {}; the JSON has all)", shown.size() / 2));
    std::string header = fmt::format("  {:<9} {:<14}", "SLOT", "FIGURE");
    for (std::size_t i : shown)
        header += fmt::format(" {:>9}", fmt::format("e{}", d.epochs[i].number));
    out += header + fmt::format(" {:>11}\n", "PER EPOCH");
    // Many slots: only the figures that move, so that a 32-worker table stays readable.
    const bool many = d.growth.size() > 9;
    for (const SlotGrowth& g : d.growth) {
        bool first = true;
        for (const GrowthFigure& f : g.figures) {
            // RSS and PSS always (few slots); the rest where they move.
            const auto per_epoch = f.growth_per_epoch_kb();
            const bool moves =
                f.monotone || (per_epoch && (*per_epoch >= 1024 || *per_epoch <= -1024));
            if (!moves && (many || (f.figure != "rss" && f.figure != "pss"))) continue;
            std::string name = f.figure == "file" ? f.path.substr(f.path.rfind('/') + 1) : f.figure;
            if (name.size() > 14) name = name.substr(0, 13) + "~";
            std::string line = fmt::format("  {:<9} {:<14}", first ? g.label : "", name);
            for (std::size_t i : shown)
                line += fmt::format(" {:>9}", f.at_epoch_end[i] ? kib(f.at_epoch_end[i]) : "-");
            const auto per = f.growth_per_epoch_kb();
            line += fmt::format(" {:>11}", per ? (*per >= 0 ? "+" : "") + signed_kib(per) : "-");
            if (f.monotone) line += "  grows every epoch";
            out += line + "\n";
            first = false;
        }
    }
    out += "\n";
}

} // namespace loaderlens
