// SPDX-License-Identifier: MIT
#include "loaderlens/advise_report.hpp"

#include "loaderlens/format_version.hpp"
#include "loaderlens/units.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace loaderlens {

namespace {

const char* counted_as(Accounting accounting) {
    switch (accounting) {
    case Accounting::slurm_linux:
        return "SLURM jobacct_gather/linux: Σ RSS of the job's processes";
    case Accounting::usepss:
        return "SLURM jobacct_gather/linux with UsePss: Σ PSS of the job's processes";
    case Accounting::cgroup:
        return "the job's cgroup (task/cgroup): everything charged to it, page cache included";
    case Accounting::k8s:
        return "Kubernetes working set: cgroup usage - inactive_file";
    }
    return "?";
}

std::string shell_word(const std::string& word) {
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("-_./=,:%+@").find(c) != std::string_view::npos;
    });
    if (plain) return word;
    std::string out = "'";
    for (char c : word)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string rate(double samples_per_second) {
    // Grouped thousands: the table is compared by eye.
    std::string digits = fmt::format("{:.0f}", samples_per_second);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string peak_cell(const AdviseRow& row, Accounting accounting) {
    if (!row.ran || !row.measure.ok) return "-";
    const AccountedPeak* p = row.measure.peak(accounting);
    if (!p || !p->measured) return "n/a";
    if (p->extrapolated) return format_kib(p->extrapolated) + "*";
    return format_kib(p->measured);
}

// The first warning of a row that does not fit: why its figure is high.
std::string why_high(const AdviseRow& row) {
    for (std::size_t i = 0; i < row.measure.finding_kinds.size(); ++i)
        if (row.measure.finding_kinds[i] != "per_generation_reset")
            return row.measure.finding_titles[i];
    return {};
}

// A margin below zero: "-40.5 MiB" (format_kib scales only what is above zero).
std::string signed_kib(const Kib& kib) {
    if (!kib) return "-";
    return *kib < 0 ? "-" + format_kib(-*kib) : format_kib(kib);
}

nlohmann::json kib_json(const Kib& kib) {
    return kib ? nlohmann::json(*kib) : nlohmann::json(nullptr);
}

} // namespace

std::string replay_command_for(const AdviseRun& run, const AdviseRow& row) {
    std::string out = "loaderlens replay " + shell_word(run.dataset);
    for (std::size_t i = 0; i < run.replay_flags.size(); ++i)
        out += " " + shell_word(run.replay_flags[i]);
    for (const auto& [flag, value] : row.setting.flags) {
        if (value == "yes")
            out += " --" + flag;
        else if (value != "no")
            out += " --" + flag + " " + shell_word(value);
    }
    return out;
}

std::string render_advise_text(const AdviseRun& run) {
    std::string out = fmt::format("loaderlens advise: {} ({}, {})\n", run.dataset,
                                  run.dataset_description, format_kib(run.dataset_bytes / 1024));
    out += fmt::format("  limit      {}, counted as {}\n", format_kib(run.limit_kb),
                       counted_as(run.accounting));
    const std::size_t ran = static_cast<std::size_t>(
        std::count_if(run.rows.begin(), run.rows.end(), [](const AdviseRow& r) { return r.ran; }));
    std::string shared;
    for (const std::string& f : run.replay_flags)
        shared += " " + f;
    out += fmt::format("  replays    {} of {} settings in {:.0f} s (budget {:.0f} s){}; each {} "
                       "epoch{}:{}\n",
                       ran, run.rows.size(), run.elapsed_s, run.budget_s,
                       run.interrupted ? ", interrupted" : "", run.replay_epochs,
                       run.replay_epochs == 1 ? "" : "s", shared);
    if (!run.page_cache.empty()) out += "  cache      " + run.page_cache + "\n";
    const AdviseAssumptions& a = run.assumptions;
    out += fmt::format("  assumed    {} for the rest of the job, {} per worker (--reserve, "
                       "--per-worker){}\n",
                       format_kib(a.reserve_kb), format_kib(a.per_worker_kb),
                       a.train_epochs ? fmt::format("; growth extrapolated to {} epochs "
                                                    "(--train-epochs)",
                                                    a.train_epochs)
                                      : std::string());
    out += "\n";
    std::size_t width = 7;
    for (const AdviseRow& row : run.rows)
        width = std::max(width, row.setting.label().size());
    const std::string peak_head = std::string("PEAK ") + to_string(run.accounting);
    out += fmt::format("  {:>2}  {:<{}}  {:>10}  {:>11}  {:>11}  {}\n", "#", "SETTING", width,
                       "SAMPLES/S", peak_head, "MARGIN", "VERDICT");
    bool any_extrapolated = false;
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
        const AdviseRow& row = run.rows[i];
        const bool measured = row.ran && row.measure.ok;
        const AccountedPeak* p = measured ? row.measure.peak(run.accounting) : nullptr;
        any_extrapolated = any_extrapolated || (p && p->extrapolated);
        out +=
            fmt::format("  {:>2}  {:<{}}  {:>10}  {:>11}  {:>11}  {}\n", i + 1, row.setting.label(),
                        width, measured ? rate(row.measure.samples_per_second) : "-",
                        peak_cell(row, run.accounting), signed_kib(row.margin_kb), row.verdict);
        if (measured && !row.measure.finding_kinds.empty()) {
            std::string kinds;
            for (const std::string& k : row.measure.finding_kinds)
                kinds += (kinds.empty() ? "" : ", ") + k;
            out += fmt::format("      {:<{}}  findings: {}\n", "", width, kinds);
        }
    }
    if (any_extrapolated)
        out += "  * extrapolated: the figure grew across the replay's epochs (persistent "
               "workers); the peak is the last epoch's plus that growth per epoch up to "
               "--train-epochs (linear, an estimate; file-backed growth held at every worker "
               "mapping the whole dataset)\n";
    if (a.reserve_kb || a.per_worker_kb)
        out += "  the margin counts the assumed memory above besides the peak shown\n";

    out += "\n";
    const Recommendation& r = run.recommendation;
    if (r.row) {
        const AdviseRow& row = run.rows[*r.row];
        const AccountedPeak* p = row.measure.peak(run.accounting);
        out += fmt::format("Recommendation: {}\n", row.setting.label());
        out += "  " + replay_command_for(run, row) + "\n";
        out += fmt::format("  {} samples/s ({:.0f} MiB/s); counted {} of the {} limit under "
                           "{}: margin {} ({:.0f}%)\n",
                           rate(row.measure.samples_per_second), row.measure.mib_per_second,
                           format_kib(p->counted), format_kib(run.limit_kb),
                           to_string(run.accounting), signed_kib(row.margin_kb),
                           100.0 * static_cast<double>(*row.margin_kb) /
                               static_cast<double>(run.limit_kb));
        out += "  why: " + r.reason + "\n";
        if (p->extrapolated)
            out += fmt::format("  note: grows {} per epoch; {} after {} epochs is extrapolated\n",
                               format_kib(p->growth_per_epoch_kb), format_kib(p->extrapolated),
                               a.train_epochs);
        for (const std::string& title : row.measure.finding_titles)
            out += "  finding: " + title + "\n";
    } else {
        out += "No recommendation: " + r.reason + "\n";
    }
    bool header = false;
    for (const AdviseRow& row : run.rows) {
        if (!row.fits || *row.fits) continue;
        if (!header) out += "Why the others do not fit:\n";
        header = true;
        const std::string why = why_high(row);
        out += fmt::format("  {}: {}{}\n", row.setting.label(), row.verdict,
                           why.empty() ? "" : "; " + why);
    }
    std::string others;
    for (const auto& [accounting, rec] : run.by_accounting) {
        if (accounting == run.accounting) continue;
        others += fmt::format("  {:<7} {}\n", to_string(accounting),
                              rec.row ? run.rows[*rec.row].setting.label() : "none: " + rec.reason);
    }
    if (!others.empty())
        out += "Under the other accountings (same rows, same limit), the pick would be:\n" + others;
    for (const std::string& note : run.notes)
        out += "note: " + note + "\n";
    return out;
}

std::string render_advise_json(const AdviseRun& run) {
    using nlohmann::json;
    json rows = json::array();
    for (const AdviseRow& row : run.rows) {
        json setting = json::object();
        for (const auto& [flag, value] : row.setting.flags)
            setting[flag] = value;
        json peaks = json::object();
        for (const auto& [accounting, p] : row.measure.peaks)
            peaks[to_string(accounting)] = {
                {"view", view_key(accounting)},
                {"measured_kib", kib_json(p.measured)},
                {"growth_per_epoch_kib",
                 p.growth_per_epoch_kb ? json(*p.growth_per_epoch_kb) : json(nullptr)},
                {"extrapolated_kib", kib_json(p.extrapolated)},
                {"extrapolation_capped", p.extrapolation_capped},
                {"counted_kib", kib_json(p.counted)},
                {"unavailable", p.unavailable.empty() ? json(nullptr) : json(p.unavailable)},
                {"note", p.note.empty() ? json(nullptr) : json(p.note)}};
        const bool measured = row.ran && row.measure.ok;
        rows.push_back(
            {{"label", row.setting.label()},
             {"setting", setting},
             {"ran", row.ran},
             {"not_run", row.not_run.empty() ? json(nullptr) : json(row.not_run)},
             {"ok", row.measure.ok},
             {"problem", row.measure.problem.empty() ? json(nullptr) : json(row.measure.problem)},
             {"samples_per_second",
              measured ? json(row.measure.samples_per_second) : json(nullptr)},
             {"mib_per_second", measured ? json(row.measure.mib_per_second) : json(nullptr)},
             {"seconds", measured ? json(row.measure.seconds) : json(nullptr)},
             {"epochs", row.measure.epochs},
             {"workers", row.measure.workers},
             {"peaks", peaks},
             {"fits", row.fits ? json(*row.fits) : json(nullptr)},
             {"margin_kib", kib_json(row.margin_kb)},
             {"verdict", row.verdict},
             {"findings", row.measure.finding_kinds},
             {"recording", row.recording.empty() ? json(nullptr) : json(row.recording)},
             {"command", replay_command_for(run, row)}});
    }
    auto pick = [&](const Recommendation& r) {
        return json{{"row", r.row ? json(*r.row) : json(nullptr)},
                    {"label", r.row ? json(run.rows[*r.row].setting.label()) : json(nullptr)},
                    {"reason", r.reason}};
    };
    json by_accounting = json::object();
    for (const auto& [accounting, rec] : run.by_accounting)
        by_accounting[to_string(accounting)] = pick(rec);
    json recommendation = pick(run.recommendation);
    if (run.recommendation.row)
        recommendation["command"] = replay_command_for(run, run.rows[*run.recommendation.row]);
    const json out{{"format_version", format_version::advise},
                   {"dataset", run.dataset},
                   {"dataset_description", run.dataset_description},
                   {"dataset_bytes", run.dataset_bytes},
                   {"limit_kib", run.limit_kb},
                   {"accounting", to_string(run.accounting)},
                   {"view", view_key(run.accounting)},
                   {"assumptions",
                    {{"reserve_kib", run.assumptions.reserve_kb},
                     {"per_worker_kib", run.assumptions.per_worker_kb},
                     {"train_epochs", run.assumptions.train_epochs}}},
                   {"replay", {{"epochs", run.replay_epochs}, {"flags", run.replay_flags}}},
                   {"budget_s", run.budget_s},
                   {"elapsed_s", run.elapsed_s},
                   {"interrupted", run.interrupted},
                   {"rows", rows},
                   {"recommendation", recommendation},
                   {"by_accounting", by_accounting},
                   {"page_cache", run.page_cache},
                   {"notes", run.notes}};
    return out.dump(2) + "\n";
}

} // namespace loaderlens
