// SPDX-License-Identifier: MIT
// `loaderlens load`: runs the reference loader (no recording; `replay` records it). Useful on its
// own under other tools (smem, vmtouch, `loaderlens record -- loaderlens load ...`).
#include "commands.hpp"
#include "loader_options.hpp"
#include "loaderlens/format_version.hpp"
#include "loaderlens/units.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>

namespace loaderlens::cli {

namespace {

std::optional<std::string> environment(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    return std::string(value);
}

void print_summary_text(const probes::LoaderSummary& s, const probes::LoaderOptions& o) {
    std::cout << fmt::format(
        "loaded {}: {} x {} B records, pattern {}, {} workers, batch {}, prefetch {}{}{}\n",
        s.dataset.description, s.dataset.record_count, s.dataset.record_bytes,
        probes::to_string(o.pattern.pattern), o.pattern.workers, o.pattern.batch, o.prefetch,
        o.persistent ? ", persistent" : "", o.pin ? ", pin" : "");
    for (const auto& e : s.epochs)
        std::cout << fmt::format(
            "epoch {} (workers generation {}): {} samples in {} batches, {:.2f} s, "
            "{:.0f} samples/s, {:.1f} MiB/s, {} read\n",
            e.epoch, e.generation, e.samples, e.batches, e.seconds(), e.samples_per_second(),
            e.mib_per_second(), format_kib(e.bytes_read / 1024, SizeStyle::spaced));
    if (s.batch_ring_bytes > 0)
        std::cout << fmt::format("batch buffers in /dev/shm: {}\n",
                                 format_kib(s.batch_ring_bytes / 1024, SizeStyle::spaced));
    if (s.pin_staging_bytes > 0)
        std::cout << fmt::format(
            "pinned staging: {}{}\n", format_kib(s.pin_staging_bytes / 1024, SizeStyle::spaced),
            s.pin_problem.empty() ? " (locked)" : " (NOT locked: " + s.pin_problem + ")");
}

void print_summary_json(const probes::LoaderSummary& s) {
    nlohmann::json out{{"format_version", format_version::load},
                       {"dataset", s.dataset.path},
                       {"description", s.dataset.description},
                       {"records", s.dataset.record_count},
                       {"record_bytes", s.dataset.record_bytes},
                       {"batch_ring_bytes", s.batch_ring_bytes},
                       {"pin_staging_bytes", s.pin_staging_bytes},
                       {"pin_problem", s.pin_problem},
                       // every byte main consumed, summed by word: the same data, the same sum
                       {"checksum", s.checksum},
                       {"epochs", nlohmann::json::array()}};
    for (const auto& e : s.epochs)
        out["epochs"].push_back({{"epoch", e.epoch},
                                 {"generation", e.generation},
                                 {"seconds", e.seconds()},
                                 {"samples", e.samples},
                                 {"batches", e.batches},
                                 {"bytes_read", e.bytes_read},
                                 {"samples_per_s", e.samples_per_second()},
                                 {"mib_per_s", e.mib_per_second()}});
    std::cout << out.dump(2) << "\n";
}

} // namespace

Runner add_load(CLI::App& app) {
    struct Options {
        LoaderFlags flags;
        bool json = false, quiet = false;
    };
    auto o = std::make_shared<Options>();
    CLI::App* sub = app.add_subcommand(
        "load", "Run the reference loader over a dataset (replay records it; see docs/loader.md)");
    add_loader_flags(sub, o->flags);
    sub->add_flag("--json", o->json, "Print the epoch statistics as JSON");
    sub->add_flag("-q,--quiet", o->quiet, "Print nothing but errors");
    return [o]() -> int {
        auto options = to_loader_options(o->flags);
        if (!options) return exit_bad_input;
        options->markers_path = environment("LOADERLENS_MARKERS");
        options->events_path = environment("LOADERLENS_LOADER_EVENTS");
        options->sampled_path = environment("LOADERLENS_SAMPLED");
        options->markers_fd = environment("LOADERLENS_MARKERS_FD");
        options->events_fd = environment("LOADERLENS_LOADER_EVENTS_FD");
        options->sampled_fd = environment("LOADERLENS_SAMPLED_FD");
        try {
            if (auto problem = dataset_bounds_problem(
                    *options, probes::inspect_dataset(options->dataset, options->record_bytes,
                                                      options->hdf5_dataset))) {
                print_error(*problem);
                return exit_bad_input;
            }
            const probes::LoaderSummary summary = probes::run_loader(*options);
            if (o->json)
                print_summary_json(summary);
            else if (!o->quiet)
                print_summary_text(summary, *options);
            return exit_ok; // main() checks standard output
        } catch (const probes::LoaderRunError& e) {
            print_error(e.what());
            return exit_internal;
        } catch (const std::runtime_error& e) { // dataset, pattern, option problems
            print_error(e.what());
            return exit_bad_input;
        }
    };
}

} // namespace loaderlens::cli
