// SPDX-License-Identifier: MIT
#include "loaderlens/advice.hpp"

#include "loaderlens/units.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <set>

namespace loaderlens {

namespace {

// Below this, a figure that rose from the first epoch to the last is noise: a sample that came
// a little later in one epoch, a batch more in flight (the diagnosis's growth threshold is the
// same order: findings_thresholds.hpp).
constexpr std::int64_t growth_noise_kb = 4 * 1024;
constexpr double growth_noise_share = 0.02;

// Rows within this share of the fastest are as fast as it: the replays' throughput varies by a
// few percent from run to run (docs/advise.md), so among them the largest margin is the better
// choice.
constexpr double same_speed_share = 0.05;

// Findings that make a setting wrong whatever it costs: a handle shared across fork (wrong data,
// errors: docs/findings.md) and memory that grows without end.
constexpr const char* disqualifying_kinds[] = {"hdf5_opened_before_fork", "lmdb_opened_before_fork",
                                               "anon_leak"};

std::string disqualified_by(const AdviseMeasure& m) {
    for (const std::string& kind : m.finding_kinds)
        for (const char* bad : disqualifying_kinds)
            if (kind == bad) return kind;
    return {};
}

bool is_cgroup(Accounting accounting) {
    return accounting == Accounting::cgroup || accounting == Accounting::k8s;
}

// The view's highest value in each epoch, for growth across epochs.
std::vector<std::int64_t> epoch_highs(const SchedulerView& view, const std::vector<Epoch>& epochs) {
    std::vector<std::int64_t> highs;
    for (const Epoch& epoch : epochs) {
        std::optional<std::int64_t> high;
        for (const SeriesPoint& p : view.points) {
            if (p.t_ms < epoch.start_ms || p.t_ms > epoch.end_ms) continue;
            const Kib v = p.max ? p.max : p.value;
            if (v && (!high || *v > *high)) high = *v;
        }
        if (!high) return {}; // an epoch without a sample: no growth to speak of
        highs.push_back(*high);
    }
    return highs;
}

AccountedPeak account(const ReportData& report, Accounting accounting, bool persistent,
                      const AdviseAssumptions& a, int workers, bool anon_leak) {
    AccountedPeak out;
    const SchedulerView* view = report.diagnosis.view(view_key(accounting));
    if (!view) {
        out.unavailable = "the report has no such view";
        return out;
    }
    if (!view->peak) {
        out.unavailable = view->unavailable.empty() ? "no sample" : view->unavailable;
        return out;
    }
    out.measured = view->peak;
    if (is_cgroup(accounting)) {
        // A cgroup that held half the peak before the replay started is not the job's own (a
        // session's, a container's): what the replay added to it is the replay's part.
        const Kib before = report.diagnosis.cgroup_before_kb;
        if (before && *before * 2 >= *view->peak) {
            out.measured = std::max<std::int64_t>(0, *view->peak - *before);
            out.note = fmt::format("the cgroup is not the job's own (it held {} before): its "
                                   "growth over the replay",
                                   format_kib(before));
        }
    }
    const int epochs = static_cast<int>(report.diagnosis.epochs.size());
    if (persistent && epochs >= 3) {
        const auto highs = epoch_highs(*view, report.diagnosis.epochs);
        // The first epoch starts from nothing mapped: its rise is warm-up, not growth per epoch.
        // Growth is the mean rise of the epochs after it (three epochs or more).
        if (highs.size() >= 3) {
            const std::int64_t grew = highs.back() - highs[1];
            const auto steps = static_cast<std::int64_t>(highs.size() - 2);
            const auto noise = std::max<std::int64_t>(
                growth_noise_kb,
                static_cast<std::int64_t>(growth_noise_share * static_cast<double>(*view->peak)));
            if (grew > noise) out.growth_per_epoch_kb = grew / steps;
        }
    }
    Kib basis = out.measured;
    if (out.growth_per_epoch_kb && a.train_epochs > epochs) {
        std::int64_t more = *out.growth_per_epoch_kb * (a.train_epochs - epochs);
        // File-backed growth stops once every worker maps the whole dataset (once counted by the
        // shared views); anonymous growth (a leak) has no such end.
        if (!anon_leak && a.dataset_kb > 0) {
            const std::int64_t cap = accounting == Accounting::slurm_linux
                                         ? a.dataset_kb * std::max(workers, 1)
                                         : a.dataset_kb;
            if (more > cap) {
                more = cap;
                out.extrapolation_capped = true;
            }
        }
        out.extrapolated = *out.measured + more;
        basis = out.extrapolated;
    }
    out.counted = *basis + a.reserve_kb + a.per_worker_kb * workers;
    return out;
}

std::string share_text(double share) {
    return fmt::format("{:.0f}%", 100 * share);
}

} // namespace

std::optional<Accounting> parse_accounting(std::string_view name) {
    for (Accounting a : all_accountings)
        if (name == to_string(a)) return a;
    return std::nullopt;
}

const char* to_string(Accounting accounting) {
    switch (accounting) {
    case Accounting::slurm_linux:
        return "linux";
    case Accounting::usepss:
        return "usepss";
    case Accounting::cgroup:
        return "cgroup";
    case Accounting::k8s:
        return "k8s";
    }
    return "?";
}

const char* view_key(Accounting accounting) {
    switch (accounting) {
    case Accounting::slurm_linux:
        return "slurm_linux";
    case Accounting::usepss:
        return "slurm_usepss";
    case Accounting::cgroup:
        return "cgroup_usage";
    case Accounting::k8s:
        return "k8s_working_set";
    }
    return "?";
}

const AccountedPeak* AdviseMeasure::peak(Accounting accounting) const {
    for (const auto& [a, p] : peaks)
        if (a == accounting) return &p;
    return nullptr;
}

AdviseMeasure measure_replay(const ReportData& report, bool persistent,
                             const AdviseAssumptions& assumptions) {
    AdviseMeasure m;
    const LoaderRun& loader = report.loader;
    if (loader.status != "ok" || loader.epochs.empty()) {
        m.problem = loader.status.empty() ? "the loader never said it finished"
                                          : "the loader failed: " + loader.message;
        return m;
    }
    m.ok = true;
    std::set<int> workers;
    for (const LoaderWorker& w : loader.workers)
        workers.insert(w.worker);
    m.workers = static_cast<int>(workers.size());
    m.epochs = static_cast<int>(loader.epochs.size());
    // The epochs as the loader timed them. Between two epochs the loader waits for the recorder's
    // epoch-end sample (a rollup interval, 250 ms here: longer than a small dataset's epoch) and
    // re-forks non-persistent workers (milliseconds for the C++ loader; a PyTorch worker's
    // start-up is not something the replay can measure): neither is counted.
    std::int64_t bytes = 0;
    for (const LoaderEpoch& e : loader.epochs) {
        m.samples += e.samples;
        bytes += e.bytes_read;
        m.seconds += e.seconds();
    }
    if (m.seconds > 0) {
        m.samples_per_second = static_cast<double>(m.samples) / m.seconds;
        m.mib_per_second = static_cast<double>(bytes) / (1024.0 * 1024.0) / m.seconds;
    }
    bool anon_leak = false;
    for (const Finding& f : report.diagnosis.findings) {
        if (f.kind == "limit_near") continue; // the replay's own limit, if any: not the user's
        anon_leak = anon_leak || f.kind == "anon_leak";
        m.finding_kinds.push_back(f.kind);
        m.finding_titles.push_back(f.title);
    }
    for (Accounting a : all_accountings)
        m.peaks.emplace_back(a, account(report, a, persistent, assumptions, m.workers, anon_leak));
    return m;
}

std::string AdviseSetting::label() const {
    std::string out;
    for (const auto& [flag, value] : flags)
        out += (out.empty() ? "" : " ") + flag + "=" + value;
    return out;
}

std::string AdviseSetting::value(const std::string& flag) const {
    for (const auto& [f, v] : flags)
        if (f == flag) return v;
    return {};
}

Recommendation recommend(std::vector<AdviseRow>& rows, Accounting accounting,
                         std::int64_t limit_kb) {
    Recommendation out;
    std::optional<std::size_t> fastest;
    std::size_t judged = 0, fitting = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        AdviseRow& row = rows[i];
        row.fits.reset();
        row.margin_kb.reset();
        if (!row.ran) {
            row.verdict = "not run: " + row.not_run;
            continue;
        }
        if (!row.measure.ok) {
            row.verdict = "failed: " + row.measure.problem;
            continue;
        }
        const AccountedPeak* p = row.measure.peak(accounting);
        if (!p || !p->counted) {
            row.verdict = "cannot be judged: " + (p ? p->unavailable : std::string("no figure"));
            continue;
        }
        ++judged;
        row.margin_kb = limit_kb - *p->counted;
        row.fits = *row.margin_kb >= 0;
        if (!*row.fits || !disqualified_by(row.measure).empty()) continue;
        ++fitting;
        if (!fastest || row.measure.samples_per_second > rows[*fastest].measure.samples_per_second)
            fastest = i;
    }
    // Among the rows as fast as the fastest (within the replays' own variation), the largest
    // margin.
    std::optional<std::size_t> pick = fastest;
    if (fastest) {
        const double top = rows[*fastest].measure.samples_per_second;
        for (std::size_t i = 0; i < rows.size(); ++i)
            if (rows[i].fits.value_or(false) && disqualified_by(rows[i].measure).empty() &&
                rows[i].measure.samples_per_second >= (1 - same_speed_share) * top &&
                *rows[i].margin_kb > *rows[*pick].margin_kb)
                pick = i;
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
        AdviseRow& row = rows[i];
        if (!row.fits) continue;
        const AccountedPeak* p = row.measure.peak(accounting);
        const std::string when =
            p->extrapolated ? " (extrapolated to the planned epochs)" : std::string();
        if (!*row.fits) {
            row.verdict = "over the limit by " + format_kib(-*row.margin_kb) + when + " under " +
                          to_string(accounting);
        } else if (const std::string kind = disqualified_by(row.measure); !kind.empty()) {
            row.verdict = "fits, but not recommended: " + kind + " (docs/findings.md)";
        } else if (pick && i == *pick) {
            row.verdict = "recommended";
        } else {
            const double best = rows[*pick].measure.samples_per_second;
            const double top = rows[*fastest].measure.samples_per_second;
            const double own = row.measure.samples_per_second;
            row.verdict = own >= (1 - same_speed_share) * top
                              ? "fits, as fast (within " + share_text(same_speed_share) +
                                    ") with a smaller margin"
                              : "fits, " + share_text(1 - own / best) + " slower";
        }
    }
    out.row = pick;
    if (pick) {
        out.reason = fmt::format("the fastest of the {} settings that fit under {}", fitting,
                                 to_string(accounting));
        if (pick != fastest)
            out.reason += fmt::format(" (as fast as the fastest, within {}, with a larger margin)",
                                      share_text(same_speed_share));
    } else if (judged == 0) {
        out.reason = "no setting could be measured under " + std::string(to_string(accounting));
    } else if (std::any_of(rows.begin(), rows.end(),
                           [](const AdviseRow& r) { return r.fits.value_or(false); })) {
        out.reason = fmt::format("the only settings that fit under {} are not recommended "
                                 "(their verdicts say why)",
                                 to_string(accounting));
    } else {
        Kib least;
        for (const AdviseRow& row : rows)
            if (row.margin_kb && (!least || -*row.margin_kb < *least)) least = -*row.margin_kb;
        out.reason = fmt::format("none of the {} settings measured fits under {}: the closest "
                                 "is over the limit by {}",
                                 judged, to_string(accounting), format_kib(least));
    }
    return out;
}

} // namespace loaderlens
