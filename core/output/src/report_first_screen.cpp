// SPDX-License-Identifier: MIT
// The report's first screen: in 24 lines of 80 columns, what the run was, the verdict, what each
// scheduler counts against the limit with who held the most of it at its peak, and who holds what
// at the peak of the figure the verdict is about. The rest of the report follows it.
#include "loaderlens/figure_text.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/text_layout.hpp"
#include "report_format.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace loaderlens {

namespace {

using report_format::kib;
using report_format::seconds;

// The lines a terminal of 24 shows; the first screen must answer within them.
constexpr std::size_t screen_lines = 24;

std::size_t line_count(const std::string& text) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::string run_line(const ReportData& r) {
    const auto [workers, helpers, slots, generations] = report_format::tree_shape(r);
    std::string state = r.finished ? "finished"
                        : r.end.state == RecordingEnd::State::being_written
                            ? "still being written"
                            : "cut"; // the notice above says how
    if (auto it = r.meta.find("exit_status"); it != r.meta.end())
        state += ", exit " + one_line(it->second);
    std::string tree = workers == 0
                           ? "no worker seen"
                           : fmt::format("{} worker slot{} ({} worker{} in {} generation{})", slots,
                                         slots == 1 ? "" : "s", workers, workers == 1 ? "" : "s",
                                         generations, generations == 1 ? "" : "s");
    return fmt::format("  {}, {}: main + {}{}\n", seconds(r.duration_ms), state, tree,
                       helpers > 0 ? " + helpers" : "");
}

// The findings' titles, most severe first, within `budget` lines (the "... more" line counted):
// each whole (wrapped) while they fit; a first one too long alone keeps its first lines, cut
// with "…".
std::string verdict_lines(const Diagnosis& d, std::size_t width, std::size_t budget) {
    if (d.findings.empty())
        return "  nothing found: no rule of docs/findings.md matched this recording\n";
    std::string lines;
    std::size_t used = 0, shown = 0;
    for (const Finding& f : d.findings) {
        const std::string tag = fmt::format("  [{}] ", to_string(f.severity));
        const std::string title = fit_to_width(tag + one_line(f.title) + "\n", width);
        const std::size_t more = d.findings.size() - shown - 1 > 0 ? 1 : 0; // a line after it
        if (used + line_count(title) + more <= budget) {
            lines += title;
            used += line_count(title);
            ++shown;
            continue;
        }
        if (shown == 0) {
            const std::size_t keep = std::max<std::size_t>(1, budget > more ? budget - more : 1);
            std::size_t at = 0;
            for (std::size_t n = 0; n < keep; ++n)
                at = title.find('\n', at) + 1;
            std::string first = title.substr(0, at - 1);
            // Room for the mark at the end of the last line kept.
            const std::size_t last = first.rfind('\n') + 1; // 0 when one line
            if (display_width(std::string_view(first).substr(last)) + 1 > width)
                first = first.substr(0, last) +
                        first_columns(std::string_view(first).substr(last), width - 1);
            lines += first + "…\n";
            ++shown;
        }
        break;
    }
    if (shown < d.findings.size())
        lines += fmt::format("  ... and {} more under Findings below\n", d.findings.size() - shown);
    return lines;
}

std::string largest(const SchedulerView& v) {
    if (v.holders.empty() || !v.holders.front().kb) return "";
    const SchedulerView::Holder& h = v.holders.front();
    return h.what + " " + kib(h.kb);
}

// A row per view: its counted figure, the margin (when some view has a limit), and its largest
// holder, shortened to what the width leaves, or on a line of its own when that is too little.
std::string views_table(const Diagnosis& d, std::size_t columns) {
    std::string out;
    const bool site = d.site.known();
    const bool margins = std::any_of(d.schedulers.begin(), d.schedulers.end(),
                                     [](const SchedulerView& v) { return v.judged_margin_kb(); });
    out += d.limit.kb ? fmt::format("What each scheduler counts at its peak, against {} ({})\n",
                                    kib(d.limit.kb), d.limit.source)
                      : "What each scheduler counts at its peak; no limit known "
                        "(report --mem-limit SIZE)\n";
    // The room a row leaves for the holder: 0 without a width.
    auto room_after = [&](const std::string& row) -> std::size_t {
        const std::size_t used = display_width(row) + 2;
        return columns == 0 ? 0 : used < columns ? columns - used : 1;
    };
    constexpr std::size_t least_room = 12;
    std::string head = fmt::format("  {}{:<22} {:>10}", site ? "SITE    " : "", "VIEW", "COUNTED");
    if (margins) head += fmt::format(" {:>11}", "MARGIN");
    const std::size_t head_room = room_after(head);
    out += head +
           (head_room == 0 || head_room >= 19 ? "  LARGEST AT THE PEAK"
            : head_room >= least_room         ? "  LARGEST"
                                              : "") +
           "\n";
    for (const SchedulerView& v : d.schedulers) {
        const std::string role = !site                        ? ""
                                 : v.site_role == "enforced"  ? "KILLS   "
                                 : v.site_role == "accounted" ? "RECORDS "
                                                              : "if      ";
        if (!v.peak) {
            out +=
                fmt::format("  {}{:<22} {:>10}  ({})\n", role, v.short_name, "n/a", v.unavailable);
            continue;
        }
        std::string row =
            fmt::format("  {}{:<22} {:>10}", role, v.short_name, kib(v.judged_counted_kb()));
        if (margins) {
            const Kib margin = v.judged_margin_kb();
            std::string margin_text = margin ? signed_size_text(margin) : std::string("-");
            if (margin && *margin < 0) margin_text += "!";
            row += fmt::format(" {:>11}", margin_text);
        }
        const std::string holder = largest(v);
        const std::size_t room = room_after(row);
        if (holder.empty())
            out += row + "\n";
        else if (room == 0 || room >= least_room)
            out += row + "  " + (room == 0 ? holder : abbreviate_middle(holder, room)) + "\n";
        else
            out += row + "\n      largest at the peak: " + holder + "\n";
    }
    return out;
}

// The view whose holders the first screen opens: the site's own figure when it is per process,
// else Σ PSS (the tree's real share), else Σ RSS.
const SchedulerView* holders_view(const Diagnosis& d) {
    if (d.site.known())
        if (const SchedulerView* v = d.view(d.site.view);
            v && v->holders.size() > 0 && !v->key.starts_with("cgroup") &&
            v->key != "k8s_working_set" && v->key != "slurm_cgroup")
            return v;
    for (const char* key : {"slurm_usepss", "slurm_linux"})
        if (const SchedulerView* v = d.view(key); v && !v->holders.empty()) return v;
    return nullptr;
}

std::string holders_lines(const ReportData& r, std::size_t width) {
    std::string out;
    if (const SchedulerView* v = holders_view(r.diagnosis)) {
        out += fmt::format("Who holds what at the peak of {} ({})\n", v->short_name,
                           seconds(v->peak_ms));
        std::string list;
        for (const SchedulerView::Holder& h : v->holders)
            list += (list.empty() ? "" : ", ") + h.what + " " + kib(h.kb);
        out += fit_to_width("  " + list + "\n", width);
    }
    // The files that hold the most, by the peak of their Σ RSS: libraries and files of less than
    // a twentieth of the tree's Σ RSS left out.
    const std::int64_t tree_rss = r.totals.rss.value.value_or(0);
    std::vector<const FileSummary*> files;
    for (const FileSummary& f : r.files)
        if (!is_shared_library(f.object.path) && f.total_rss.value &&
            saturating_mul(*f.total_rss.value, 20) >= tree_rss)
            files.push_back(&f);
    std::stable_sort(files.begin(), files.end(), [](const FileSummary* a, const FileSummary* b) {
        return *a->total_rss.value > *b->total_rss.value;
    });
    // Each file's own peaks (the Mapped files section has when).
    for (std::size_t i = 0; i < files.size() && i < 2; ++i) {
        const FileSummary& f = *files[i];
        const std::string figures = fmt::format(": peaks Σ RSS {}, Σ PSS {}",
                                                kib(f.total_rss.value), kib(f.total_pss.value));
        const std::size_t room =
            width > display_width(figures) + 9 ? width - display_width(figures) - 9 : 20;
        out += "  file " + abbreviate_middle(one_line(f.object.path), room) + figures + "\n";
    }
    return out;
}

} // namespace

void append_first_screen(std::string& out, const ReportData& r, std::size_t width,
                         const std::string& notices) {
    const std::size_t fitted = width == 0 ? 1000 : std::max<std::size_t>(width, 20);
    // The title keeps its words; a long path is shortened in its middle.
    const std::string words = r.part.empty() ? std::string()
                                             : ", part " + r.part +
                                                   " of a merged recording (times on the part's "
                                                   "own clock)";
    std::string path = one_line(r.path);
    const std::size_t fixed_words = display_width("loaderlens report: " + words);
    if (width > 0 && fixed_words + 20 <= width) path = abbreviate_middle(path, width - fixed_words);
    const std::string head = fit_to_width("loaderlens report: " + path + words + "\n", width) +
                             fit_to_width(notices, width) + fit_to_width(run_line(r), width) + "\n";
    const std::string views = fit_to_width(views_table(r.diagnosis, width), width);
    const std::string holders = holders_lines(r, fitted);
    // The verdict's heading and the blank lines between the blocks (the one after the screen
    // may be its 25th line).
    const std::size_t fixed =
        line_count(head) + 1 + 1 + line_count(views) + 1 + line_count(holders);
    const std::size_t budget = fixed + 1 < screen_lines ? screen_lines - fixed : 1;
    out += head;
    out += fit_to_width(
        "Verdict (most severe first; evidence under Findings below, docs/findings.md)\n", width);
    out += verdict_lines(r.diagnosis, fitted, budget);
    out += "\n" + views + "\n" + holders + "\n";
}

} // namespace loaderlens
