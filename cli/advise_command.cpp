// SPDX-License-Identifier: MIT
// `loaderlens advise DATASET --mem-limit SIZE`: short replays of the user's dataset over a grid
// of loader settings, each recorded and diagnosed, then the fastest setting that fits the limit as
// the chosen accounting counts it (docs/advise.md).
#include "advise_grid.hpp"
#include "advise_progress.hpp"
#include "commands.hpp"
#include "loaderlens/advise_report.hpp"
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "numeric_option.hpp"
#include "output_checks.hpp"
#include "output_name.hpp"
#include "replay_command.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <unistd.h>
#include <vector>

namespace loaderlens::cli {

namespace {

struct AdviseOptions {
    LoaderFlags base;
    GridFlags grid;
    std::string mem_limit, accounting = "linux", budget = "5m", reserve = "0", per_worker = "0";
    std::string keep;
    int train_epochs = 10;
    bool json = false, quiet = false, full_grid = false;
    bool cold = false;
    bool auto_epochs = true; // no --epochs: 2, or more when an epoch is short
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The flags every replay shares, as `replay` takes them (shown with the recommended command).
std::vector<std::string> shared_flags(const LoaderFlags& f, const std::vector<GridAxis>& fixed) {
    std::vector<std::string> out{"--pattern", f.pattern, "--epochs", std::to_string(f.epochs)};
    for (const GridAxis& axis : fixed) {
        const std::string& value = axis.values.front();
        if (value == "yes")
            out.push_back("--" + axis.flag);
        else if (value != "no")
            out.insert(out.end(), {"--" + axis.flag, value});
    }
    if (f.record_size) out.insert(out.end(), {"--record-size", *f.record_size});
    if (!f.hdf5_dataset.empty()) out.insert(out.end(), {"--hdf5-dataset", f.hdf5_dataset});
    if (f.step_time != "0") out.insert(out.end(), {"--step-time", f.step_time});
    if (f.transform_time != "0") out.insert(out.end(), {"--transform-time", f.transform_time});
    if (f.subset != 1.0) out.insert(out.end(), {"--subset", std::to_string(f.subset)});
    if (f.seed != 0) out.insert(out.end(), {"--seed", std::to_string(f.seed)});
    return out;
}

// Replays shorter than this measure throughput over too few batches (and memory over too few
// samples: the fast tier reads every 100 ms).
constexpr double min_loading_s = 2;
constexpr int max_auto_epochs = 20;

// More epochs when the first replay loaded for less than min_loading_s; nothing otherwise.
std::optional<int> epochs_for_a_measure(const AdviseMeasure& m, int epochs) {
    if (!m.ok || m.epochs <= 0 || m.seconds >= min_loading_s) return std::nullopt;
    const double per_epoch = std::max(m.seconds / m.epochs, 1e-3);
    const int wanted =
        std::min(max_auto_epochs, static_cast<int>(std::ceil(min_loading_s / per_epoch)));
    if (wanted <= epochs) return std::nullopt;
    return wanted;
}

// Every setting starts with the dataset's page cache alike: read once before the grid (warm), or
// dropped before each replay (--cold: POSIX_FADV_DONTNEED drops the file's clean pages, no root
// needed). Otherwise the first setting would pay for reading from disk and the others not.
void prepare_page_cache(const std::string& file, bool cold) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return; // the replay says why it cannot read it
    if (cold) {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    } else {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        std::vector<char> buffer(1 << 20);
        off_t offset = 0;
        for (ssize_t n; (n = ::pread(fd, buffer.data(), buffer.size(), offset)) > 0;)
            offset += n;
    }
    ::close(fd);
}

// The signals that stop `advise` (the recorder takes them through its signalfd during replays).
sigset_t stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        sigaddset(&set, sig);
    return set;
}

void block_stop_signals() {
    const sigset_t set = stop_signals();
    sigprocmask(SIG_BLOCK, &set, nullptr);
}

// A stop signal that came while no replay ran (taken), or 0.
int pending_stop_signal() {
    const sigset_t set = stop_signals();
    const timespec now{0, 0};
    const int sig = sigtimedwait(&set, nullptr, &now);
    return sig > 0 ? sig : 0;
}

// The replays' directory when it is ours: removed however run_advise ends.
struct TemporaryDirectory {
    std::string path;
    void remove() {
        std::error_code error;
        if (!path.empty()) std::filesystem::remove_all(path, error);
        path.clear();
    }
    ~TemporaryDirectory() { remove(); }
};

// Runs one setting under the recorder and measures its recording. True when the loader refused
// the dataset (exit 2: damage found mid-run, said in its own line).
bool run_row(AdviseRow& row, const LoaderFlags& base, const std::string& directory, int number,
             const AdviseAssumptions& assumptions, bool keep, int& killed_by) {
    RecordOptions record;
    // The directory is expanded already (--keep runs-%j): record must not expand it again.
    record.output = literal_output_name(directory) + "/advise-" + std::to_string(number) + ".db";
    record.force = true;
    record.quiet = true;
    // Replays of a few seconds: RSS read 20 times a second, PSS and the cgroup 4 times, not once
    // (docs/advise.md: peaks of short epochs).
    record.intervals = {"fast=50ms", "rollup=250ms", "cgroup=250ms"};
    // Every PSS read whole from smaps_rollup: a reading kept while the tree stands still, with
    // the data file's share recomputed from pagemap (record's default, docs/figures.md), moved
    // Σ PSS by up to 12% between two replays of one setting here; a few processes cost little.
    record.pss_max_age = "0";
    const LoaderFlags flags = with_setting(base, row.setting);
    ReplayRecording replayed = record_replay(flags, record);
    row.ran = true;
    killed_by = replayed.result.killed_by;
    const bool refused = !replayed.early_exit && replayed.result.exit_code == exit_bad_input;
    if (replayed.early_exit || !replayed.output) {
        row.measure.problem = replayed.early_exit ? "bad setting (said above)" : "nothing recorded";
        return refused;
    }
    try {
        const ReportData report = build_report(Recording(*replayed.output));
        row.measure = measure_replay(report, flags.persistent, assumptions);
    } catch (const std::exception& e) {
        row.measure.problem = std::string("its recording could not be read: ") + e.what();
    }
    if (killed_by) { // the replay was cut short: its figures are not the setting's
        row.measure.ok = false;
        row.measure.problem = std::string("interrupted (") + strsignal(killed_by) + ")";
    }
    if (keep)
        row.recording = *replayed.output;
    else
        std::filesystem::remove(*replayed.output);
    return refused;
}

// The row round two varies around: the fastest that fits, else the one counted lowest.
std::optional<AdviseSetting> centre_of(std::vector<AdviseRow> rows, Accounting accounting,
                                       std::int64_t limit_kb) {
    const Recommendation r = recommend(rows, accounting, limit_kb);
    if (r.row) return rows[*r.row].setting;
    const AdviseRow* lowest = nullptr;
    for (const AdviseRow& row : rows)
        if (row.margin_kb && (!lowest || *row.margin_kb > *lowest->margin_kb)) lowest = &row;
    if (lowest) return lowest->setting;
    return std::nullopt;
}

int run_advise(AdviseOptions& o) {
    const auto limit = parse_size(o.mem_limit);
    const auto accounting = parse_accounting(o.accounting);
    const auto budget_us = parse_duration_us(o.budget);
    const auto reserve = parse_size_or_zero(o.reserve);
    const auto per_worker = parse_size_or_zero(o.per_worker);
    auto bad = [](const std::string& message) {
        print_error(message);
        return exit_bad_input;
    };
    if (!limit) return bad("--mem-limit " + o.mem_limit + ": expected a size like 4G or 4096MiB");
    if (!accounting)
        return bad("--accounting " + o.accounting + ": expected linux, usepss, cgroup or k8s");
    if (!budget_us || *budget_us < 1'000'000)
        return bad("--budget " + o.budget + ": expected a duration like 5m, 90s or 1h");
    if (!reserve) return bad("--reserve " + o.reserve + ": expected a size like 2G, or 0");
    if (!per_worker)
        return bad("--per-worker " + o.per_worker + ": expected a size like 300M, or 0");
    auto checked = to_loader_options(o.base);
    if (!checked) return exit_bad_input;
    probes::DatasetLayout layout;
    try { // bad input is said before anything runs
        probes::check_loader(*checked, layout);
    } catch (const std::runtime_error& e) {
        print_error(e.what());
        return exit_bad_input;
    }
    auto axes = grid_axes(o.grid, probes::to_string(layout.kind), o.base.epochs);
    if (!axes) return exit_bad_input;
    std::vector<GridAxis> varied, fixed;
    for (GridAxis& axis : *axes)
        // Workers stay in every setting's name, even as the only value.
        (axis.values.size() > 1 || axis.flag == "workers" ? varied : fixed).push_back(axis);
    LoaderFlags base = o.base;
    for (const GridAxis& axis : fixed)
        base = with_setting(base, AdviseSetting{{{axis.flag, axis.values.front()}}});
    // Refused before anything is built or run: a grid too large to walk, and a value no
    // setting can run with (each setting would fail alike, and that is bad input, not "none fits").
    if (auto problem = too_many_settings(varied, o.full_grid)) return bad(*problem);
    if (!every_setting_runnable(base, varied, o.full_grid)) return exit_bad_input;

    AdviseRun run;
    run.dataset = o.base.dataset;
    run.dataset_description = layout.description;
    run.dataset_bytes = layout.record_count * layout.record_bytes;
    run.limit_kb = *limit / 1024;
    run.accounting = *accounting;
    run.assumptions = {.reserve_kb = *reserve / 1024,
                       .per_worker_kb = *per_worker / 1024,
                       .train_epochs = o.train_epochs,
                       .dataset_kb = run.dataset_bytes / 1024};
    run.replay_epochs = o.base.epochs;
    run.replay_flags = shared_flags(base, fixed);
    run.budget_s = static_cast<double>(*budget_us) / 1e6;
    run.page_cache = o.cold ? "cold: the dataset's page cache was dropped before each replay "
                              "(its clean pages; --cold)"
                            : "warm: the dataset was read once before the first replay, so every "
                              "replay starts alike (--cold: from disk)";

    // From here a SIGINT, SIGTERM or SIGHUP waits (the replays take them through the recorder's
    // signalfd, between replays it is taken below) instead of killing us with the temporary
    // directory left behind; the guard removes it on every way out, an exception included.
    block_stop_signals();
    TemporaryDirectory temporary;
    std::string directory = o.keep.empty() ? "" : expand_output_name(o.keep);
    if (directory.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/loaderlens-advise-XXXXXX";
        if (!::mkdtemp(pattern.data())) {
            print_error(pattern + ": cannot make a directory for the replays' recordings");
            return exit_internal;
        }
        directory = temporary.path = pattern;
    } else {
        if (auto problem = output_name_problem("--keep", directory)) return bad(*problem);
        std::error_code error;
        std::filesystem::create_directories(directory, error);
        if (error) return bad("--keep " + directory + ": " + error.message());
    }

    const auto started = std::chrono::steady_clock::now();
    std::vector<AdviseSetting> settings = o.full_grid ? full_grid(varied) : first_round(varied);
    bool second_round_added = o.full_grid || varied.empty();
    AdviseProgress progress(!o.quiet && ::isatty(STDERR_FILENO), run.budget_s);
    double spent_on_rows = 0;
    int killed_by = 0;
    for (std::size_t i = 0; i < settings.size(); ++i) {
        AdviseRow row{settings[i]};
        const double elapsed = seconds_since(started);
        const double estimate = i == 0 ? 0 : spent_on_rows / static_cast<double>(i);
        if (!killed_by) killed_by = pending_stop_signal();
        if (killed_by) {
            row.not_run = "interrupted";
        } else if (i > 0 && elapsed + estimate > run.budget_s) {
            row.not_run = "the time budget (--budget " + o.budget + ") was spent";
        } else {
            progress.show(i, settings.size(), elapsed, row.setting.label());
            if (o.cold || i == 0) prepare_page_cache(layout.data_file, o.cold);
            const auto row_started = std::chrono::steady_clock::now();
            bool refused = run_row(row, base, directory, static_cast<int>(i + 1), run.assumptions,
                                   !o.keep.empty(), killed_by);
            if (i == 0 && o.auto_epochs && !killed_by && !refused)
                if (auto more = epochs_for_a_measure(row.measure, base.epochs)) {
                    run.notes.push_back(fmt::format(
                        "{} epochs of the first setting took {:.2f} s: every replay runs {} "
                        "epochs, for at least {:.0f} s of loading to measure",
                        base.epochs, row.measure.seconds, *more, min_loading_s));
                    base.epochs = run.replay_epochs = *more;
                    run.replay_flags = shared_flags(base, fixed);
                    row = AdviseRow{settings[i]};
                    if (o.cold) prepare_page_cache(layout.data_file, true);
                    refused = run_row(row, base, directory, 1, run.assumptions, !o.keep.empty(),
                                      killed_by);
                }
            spent_on_rows += seconds_since(row_started);
            // The loader refused the dataset mid-run (damage its first check did not see): bad
            // input, said in its one line; every other setting would find it too.
            if (refused && !killed_by) return exit_bad_input;
        }
        run.rows.push_back(std::move(row));
        if (i + 1 == settings.size() && !second_round_added && !killed_by) {
            second_round_added = true;
            if (auto centre = centre_of(run.rows, *accounting, run.limit_kb))
                for (AdviseSetting& s : second_round(varied, *centre))
                    settings.push_back(std::move(s));
        }
    }
    progress.clear();
    if (!killed_by) killed_by = pending_stop_signal();
    run.elapsed_s = seconds_since(started);
    run.interrupted = killed_by != 0;
    temporary.remove();

    run.recommendation = recommend(run.rows, *accounting, run.limit_kb);
    for (Accounting a : all_accountings) {
        std::vector<AdviseRow> copy = run.rows;
        run.by_accounting.emplace_back(a, recommend(copy, a, run.limit_kb));
    }
    recommend(run.rows, *accounting, run.limit_kb); // the verdicts of the chosen accounting
    for (const AdviseRow& row : run.rows) {
        const AccountedPeak* p = row.measure.ok ? row.measure.peak(*accounting) : nullptr;
        if (p && !p->note.empty()) {
            run.notes.push_back(std::string(to_string(*accounting)) + ": " + p->note +
                                "; run advise inside the job's own cgroup for its own figure");
            break;
        }
    }
    run.notes.push_back("the reference loader's processes are small C++ processes: a training "
                        "script adds its model, CUDA context and (per worker) interpreter; give "
                        "them with --reserve and --per-worker");
    std::cout << (o.json ? render_advise_json(run) : render_advise_text(run));
    std::cout.flush();
    if (killed_by) {
        RecordResult result;
        result.killed_by = killed_by;
        result.exit_code = 128 + killed_by;
        return end_like_the_command(result);
    }
    return run.recommendation.row ? exit_ok : exit_budget_failed;
}

} // namespace

Runner add_advise(CLI::App& app) {
    auto o = std::make_shared<AdviseOptions>();
    CLI::App* sub = app.add_subcommand(
        "advise", "Replay a dataset over a grid of loader settings: the fastest that fits a "
                  "memory limit, counted the way the scheduler counts");
    sub->add_option("dataset", o->base.dataset,
                    "Dataset: .npy file, raw file, LMDB directory or HDF5 file")
        ->required();
    sub->add_option("--mem-limit", o->mem_limit, "The job's memory limit (SLURM --mem), e.g. 4G")
        ->required();
    sub->add_option("--accounting", o->accounting,
                    "How the limit is counted: linux (SLURM's default, Σ RSS), usepss (Σ PSS), "
                    "cgroup (task/cgroup, page cache included), k8s (working set)")
        ->capture_default_str();
    sub->add_option("--budget", o->budget, "Time for all the replays (5m, 90s)")
        ->capture_default_str();
    sub->add_flag("--json", o->json, "Print JSON (docs/advise.md)");
    sub->add_flag("-q,--quiet", o->quiet, "No progress bar");
    sub->add_flag("--full-grid", o->full_grid,
                  "Every combination of the lists, instead of two rounds");
    sub->add_flag("--cold", o->cold,
                  "Drop the dataset's page cache before each replay (default: read it once "
                  "before the first, so every replay starts warm)");
    sub->add_option("--keep", o->keep,
                    "Keep each replay's recording in this directory (made with its parents; %j, "
                    "%N... expand as in record -o)");
    auto* g = sub->add_option_group("Grid (comma-separated values)");
    g->add_option("--workers", o->grid.workers, "Worker counts")->capture_default_str();
    g->add_option("--read", o->grid.read, "Read modes (npy, raw: mmap-view,pread)");
    g->add_option("--persistent", o->grid.persistent, "no, yes (default both with 2+ epochs)");
    g->add_option("--pin", o->grid.pin, "no, yes")->capture_default_str();
    g->add_option("--advice", o->grid.advice, "Access advice")->capture_default_str();
    g->add_option("--readahead", o->grid.readahead, "LMDB: on, off (default both)");
    g->add_option("--chunk-cache", o->grid.chunk_cache, "HDF5: chunk cache sizes (0, 1MiB...)");
    g->add_option("--hdf5-open", o->grid.hdf5_open, "HDF5: parent, worker")->capture_default_str();
    g->add_option("--batch", o->grid.batch, "Batch sizes")->capture_default_str();
    g->add_option("--prefetch", o->grid.prefetch, "Prefetch factors")->capture_default_str();
    auto* r = sub->add_option_group("Every replay");
    add_whole_number_option(r, "--epochs", o->base.epochs, 1, 100,
                            "Epochs per replay (default 3: a warm-up epoch, then two to measure "
                            "growth; more when they load for under 2 s)")
        ->each([o](const std::string&) { o->auto_epochs = false; });
    r->add_option("--pattern", o->base.pattern, "Sampling pattern")->capture_default_str();
    r->add_option("--record-size", o->base.record_size, "Raw datasets: bytes per record");
    r->add_option("--hdf5-dataset", o->base.hdf5_dataset, "HDF5: the dataset in the file");
    r->add_option("--step-time", o->base.step_time, "Training step per batch (e.g. 20ms)")
        ->capture_default_str();
    r->add_option("--transform-time", o->base.transform_time,
                  "Work per sample in the worker: decode, augmentation (e.g. 2ms)")
        ->capture_default_str();
    add_real_option(r, "--subset", o->base.subset, 0, 1, true, "in (0, 1]",
                    "Fraction of the dataset each epoch reads");
    add_whole_number_option<std::uint64_t>(r, "--seed", o->base.seed, 0, UINT64_MAX, "Seed");
    auto* a = sub->add_option_group("The rest of the job");
    add_whole_number_option(a, "--train-epochs", o->train_epochs, 0, 1'000'000,
                            "Epochs of the real training: growth is extrapolated to them");
    a->add_option("--reserve", o->reserve, "Memory of the job besides the loader (model, CUDA)")
        ->capture_default_str();
    a->add_option("--per-worker", o->per_worker,
                  "Memory each real worker has besides its reads (an interpreter, imports)")
        ->capture_default_str();
    o->base.epochs = 3;
    sub->footer("Exit status: 0 a setting fits (the recommendation), 3 settings ran and none "
                "fits, 2 bad input (also a value no setting can run with, a grid of more than "
                "1000 settings, a dataset a replay found damaged), 1 an internal failure; "
                "interrupted: the table so far, then the signal's.");
    return [o] { return run_advise(*o); };
}

} // namespace loaderlens::cli
