// SPDX-License-Identifier: MIT
// `advise`'s judgement on made-up measurements: which row is recommended, what each verdict
// says, and how growth across epochs is extrapolated and held. The replays themselves are tested
// in test_advise.cpp.
#include "loaderlens/advice.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;

namespace {

constexpr std::int64_t mib = 1024; // in KiB

// A row that ran: `speed` samples/s, counted `linux_mib` under linux and a tenth under usepss.
AdviseRow row(const std::string& workers, double speed, std::int64_t linux_mib) {
    AdviseRow r;
    r.setting.flags = {{"workers", workers}};
    r.ran = true;
    r.measure.ok = true;
    r.measure.samples_per_second = speed;
    AccountedPeak linux_peak, pss_peak;
    linux_peak.measured = linux_peak.counted = linux_mib * mib;
    pss_peak.measured = pss_peak.counted = linux_mib * mib / 10;
    r.measure.peaks = {{Accounting::slurm_linux, linux_peak}, {Accounting::usepss, pss_peak}};
    return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(advice_rules)

BOOST_AUTO_TEST_CASE(the_fastest_setting_that_fits_is_recommended) {
    std::vector<AdviseRow> rows{row("1", 100, 300), row("2", 200, 600), row("4", 400, 1200)};
    const Recommendation linux = recommend(rows, Accounting::slurm_linux, 1000 * mib);
    BOOST_REQUIRE(linux.row);
    BOOST_TEST(*linux.row == 1u);
    BOOST_TEST(rows[1].verdict == "recommended");
    BOOST_TEST(rows[0].verdict == "fits, 50% slower");
    BOOST_TEST(rows[2].verdict.starts_with("over the limit by 200.0 MiB"));
    BOOST_TEST(*rows[2].margin_kb == -200 * mib);
    BOOST_TEST(!*rows[2].fits);
    // Σ PSS counts a tenth: every row fits, and the fastest wins.
    const Recommendation pss = recommend(rows, Accounting::usepss, 1000 * mib);
    BOOST_REQUIRE(pss.row);
    BOOST_TEST(*pss.row == 2u);
    BOOST_TEST(pss.reason == "the fastest of the 3 settings that fit under usepss");
}

BOOST_AUTO_TEST_CASE(as_fast_settings_prefer_the_larger_margin) {
    // 98 samples/s is within 5% of 100: the same speed as far as a replay can tell.
    std::vector<AdviseRow> rows{row("8", 100, 900), row("4", 98, 400), row("2", 90, 200)};
    const Recommendation r = recommend(rows, Accounting::slurm_linux, 1000 * mib);
    BOOST_REQUIRE(r.row);
    BOOST_TEST(*r.row == 1u);
    BOOST_TEST(r.reason.find("larger margin") != std::string::npos);
    BOOST_TEST(rows[0].verdict == "fits, as fast (within 5%) with a smaller margin");
    BOOST_TEST(rows[2].verdict == "fits, 8% slower");
}

BOOST_AUTO_TEST_CASE(a_handle_shared_across_fork_is_never_recommended) {
    std::vector<AdviseRow> rows{row("2", 100, 300), row("8", 400, 200)};
    rows[1].measure.finding_kinds = {"hdf5_opened_before_fork"};
    const Recommendation r = recommend(rows, Accounting::slurm_linux, 1000 * mib);
    BOOST_REQUIRE(r.row);
    BOOST_TEST(*r.row == 0u);
    BOOST_TEST(*rows[1].fits);
    BOOST_TEST(rows[1].verdict ==
               "fits, but not recommended: hdf5_opened_before_fork (docs/findings.md)");
    // When it is the only one that fits: no recommendation, and not "over the limit".
    const Recommendation none = recommend(rows, Accounting::slurm_linux, 250 * mib);
    BOOST_TEST(!none.row);
    BOOST_TEST(none.reason == "the only settings that fit under linux are not recommended (their "
                              "verdicts say why)");
}

BOOST_AUTO_TEST_CASE(rows_without_a_figure_are_never_recommended) {
    std::vector<AdviseRow> rows{row("1", 100, 300), row("2", 500, 300), row("4", 900, 300)};
    rows[1].measure.peaks[0].second.counted.reset();
    rows[1].measure.peaks[0].second.unavailable = "no sample of this figure";
    rows[2].ran = false;
    rows[2].not_run = "the time budget (--budget 5m) was spent";
    const Recommendation r = recommend(rows, Accounting::slurm_linux, 1000 * mib);
    BOOST_REQUIRE(r.row);
    BOOST_TEST(*r.row == 0u);
    BOOST_TEST(rows[1].verdict == "cannot be judged: no sample of this figure");
    BOOST_TEST(!rows[1].fits.has_value());
    BOOST_TEST(rows[2].verdict == "not run: the time budget (--budget 5m) was spent");
    // No figure at all under an accounting the rows lack: no recommendation, and why.
    const Recommendation k8s = recommend(rows, Accounting::k8s, 1000 * mib);
    BOOST_TEST(!k8s.row);
    BOOST_TEST(k8s.reason == "no setting could be measured under k8s");
    const Recommendation tight = recommend(rows, Accounting::slurm_linux, 100 * mib);
    BOOST_TEST(!tight.row);
    BOOST_TEST(tight.reason.find("the closest is over the limit by 200.0 MiB") !=
               std::string::npos);
}

namespace {

// A report of a persistent replay of three epochs whose Σ RSS rose to 100 MiB in the first
// (warm-up), then to 120 and 140 MiB.
ReportData growing_report() {
    ReportData report;
    report.loader.status = "ok";
    report.loader.epochs = {{.epoch = 0, .start_ms = 0, .end_ms = 1000, .samples = 1000},
                            {.epoch = 1, .start_ms = 1000, .end_ms = 2000, .samples = 1000},
                            {.epoch = 2, .start_ms = 2000, .end_ms = 3000, .samples = 1000}};
    report.loader.workers = {{.worker = 0}, {.worker = 1}};
    report.diagnosis.epochs = {{0, 0, 1000}, {1, 1000, 2000}, {2, 2000, 3000}};
    SchedulerView linux_view;
    linux_view.key = "slurm_linux";
    for (auto [t, kib] : {std::pair{500, 90 * mib},
                          {900, 100 * mib},
                          {1500, 115 * mib},
                          {1900, 120 * mib},
                          {2900, 140 * mib}})
        linux_view.points.push_back({.t_ms = t, .value = kib, .min = kib, .max = kib});
    linux_view.peak = 140 * mib;
    report.diagnosis.schedulers.push_back(linux_view);
    return report;
}

} // namespace

BOOST_AUTO_TEST_CASE(growth_across_epochs_is_extrapolated_and_held_at_the_dataset) {
    const ReportData report = growing_report();
    AdviseAssumptions a{.reserve_kb = 10 * mib, .per_worker_kb = 5 * mib, .train_epochs = 10};
    AdviseMeasure m = measure_replay(report, true, a);
    BOOST_REQUIRE(m.ok);
    BOOST_TEST(m.workers == 2);
    BOOST_TEST(m.samples_per_second == 1000.0);
    const AccountedPeak* p = m.peak(Accounting::slurm_linux);
    BOOST_REQUIRE(p);
    // 120 -> 140: the first epoch's rise to 100 is warm-up.
    BOOST_TEST(*p->growth_per_epoch_kb == 20 * mib);
    BOOST_TEST(*p->extrapolated == (140 + 7 * 20) * mib);
    BOOST_TEST(*p->counted == (140 + 7 * 20 + 10 + 2 * 5) * mib);
    // Usepss has no view in this report: unavailable, never 0.
    BOOST_TEST(!m.peak(Accounting::usepss)->counted.has_value());
    BOOST_TEST(!m.peak(Accounting::usepss)->unavailable.empty());

    // A 30 MiB dataset: two workers can map at most 60 MiB more of it (file-backed growth).
    a.dataset_kb = 30 * mib;
    m = measure_replay(report, true, a);
    BOOST_TEST(*m.peak(Accounting::slurm_linux)->extrapolated == (140 + 60) * mib);
    BOOST_TEST(m.peak(Accounting::slurm_linux)->extrapolation_capped);

    // Workers that are not persistent start afresh each epoch: no extrapolation.
    m = measure_replay(report, false, a);
    BOOST_TEST(!m.peak(Accounting::slurm_linux)->extrapolated.has_value());
    BOOST_TEST(*m.peak(Accounting::slurm_linux)->counted == (140 + 10 + 2 * 5) * mib);
}

BOOST_AUTO_TEST_CASE(growth_needs_an_epoch_after_the_warm_up_and_more_than_noise) {
    // Two epochs: the only rise is the first epoch's warm-up.
    ReportData report = growing_report();
    report.loader.epochs.pop_back();
    report.diagnosis.epochs.pop_back();
    auto& view = report.diagnosis.schedulers.front();
    view.points.pop_back();
    view.peak = 120 * mib;
    BOOST_TEST(!measure_replay(report, true, {.train_epochs = 10})
                    .peak(Accounting::slurm_linux)
                    ->growth_per_epoch_kb.has_value());
    // Three epochs, 120 -> 123 MiB: under the noise threshold (4 MiB, or 2% of the peak).
    report = growing_report();
    report.diagnosis.schedulers.front().points.back().value = 123 * mib;
    report.diagnosis.schedulers.front().points.back().max = 123 * mib;
    report.diagnosis.schedulers.front().peak = 123 * mib;
    BOOST_TEST(!measure_replay(report, true, {.train_epochs = 10})
                    .peak(Accounting::slurm_linux)
                    ->growth_per_epoch_kb.has_value());
}

BOOST_AUTO_TEST_CASE(a_failed_loader_has_no_figures) {
    ReportData report = growing_report();
    report.loader.status = "error";
    report.loader.message = "worker 1 died";
    const AdviseMeasure m = measure_replay(report, false, {});
    BOOST_TEST(!m.ok);
    BOOST_TEST(m.problem == "the loader failed: worker 1 died");
    std::vector<AdviseRow> rows{AdviseRow{}};
    rows[0].ran = true;
    rows[0].measure = m;
    BOOST_TEST(!recommend(rows, Accounting::slurm_linux, 1000 * mib).row);
    BOOST_TEST(rows[0].verdict == "failed: the loader failed: worker 1 died");
}

BOOST_AUTO_TEST_CASE(accounting_names) {
    for (Accounting a : all_accountings)
        BOOST_TEST((parse_accounting(to_string(a)) == a));
    BOOST_TEST(!parse_accounting("rss").has_value());
    BOOST_TEST(std::string(view_key(Accounting::k8s)) == "k8s_working_set");
}

BOOST_AUTO_TEST_SUITE_END()
