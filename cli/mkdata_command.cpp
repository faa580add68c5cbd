// SPDX-License-Identifier: MIT
// `loaderlens mkdata npy|raw|lmdb|hdf5 PATH`: generate a dataset of known size and deterministic
// content for the reference loader (docs/datasets.md).
#include "commands.hpp"
#include "loaderlens/probes/mkdata.hpp"
#include "numeric_option.hpp"
#include "output_checks.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <sys/statvfs.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

namespace probes = loaderlens::probes;

// 2^62 records: the dataset's byte size is checked for overflow after this.
constexpr std::int64_t max_mkdata_count = std::int64_t{1} << 62;

// "3x32x32" (or "3,32,32") -> {3, 32, 32}; "" -> {} (each record one element).
std::optional<std::vector<std::int64_t>> parse_shape(const std::string& text) {
    std::vector<std::int64_t> shape;
    if (text.empty()) return shape;
    std::size_t start = 0;
    while (true) {
        const std::size_t end = text.find_first_of("x,", start);
        const std::string part = text.substr(start, end - start);
        if (part.empty() || part.size() > 12 ||
            part.find_first_not_of("0123456789") != std::string::npos)
            return std::nullopt;
        const std::int64_t dim = std::stoll(part);
        if (dim < 1) return std::nullopt;
        shape.push_back(dim);
        if (end == std::string::npos) return shape;
        start = end + 1;
    }
}

std::string format_bytes(std::int64_t bytes) {
    if (bytes < 1024) return fmt::format("{} bytes", bytes);
    const double mib = static_cast<double>(bytes) / 0x1p20;
    const std::string human = mib >= 1024 ? fmt::format("{:.2f} GiB", mib / 1024)
                              : mib >= 1  ? fmt::format("{:.1f} MiB", mib)
                                          : fmt::format("{:.1f} KiB", mib * 1024);
    return fmt::format("{} ({} bytes)", human, bytes);
}

// "\r"-redrawn on a terminal only, so that a log file or a pipe gets nothing but the result.
class ProgressBar {
  public:
    explicit ProgressBar(std::string path) : path_(std::move(path)) {}
    void update(std::int64_t done, std::int64_t total) {
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        drawn_ = true;
        std::fprintf(stderr, "\r\033[Kmkdata %s: %.1f / %.1f MiB  %3d%%", path_.c_str(),
                     static_cast<double>(done) / 0x1p20, static_cast<double>(total) / 0x1p20,
                     total > 0 ? static_cast<int>(100 * done / total) : 100);
        std::fflush(stderr);
    }
    void clear() {
        if (!drawn_) return;
        std::fprintf(stderr, "\r\033[K");
        std::fflush(stderr);
        drawn_ = false;
    }

  private:
    std::string path_;
    bool enabled_ = ::isatty(STDERR_FILENO) == 1;
    bool drawn_ = false;
    std::chrono::steady_clock::time_point last_;
};

// Ctrl-C while writing: stop at the next progress report and let make_dataset's cleanup remove
// the partial dataset, instead of leaving gigabytes under a hidden temporary name.
std::atomic<int> interrupt_signal{0};
extern "C" void on_interrupt(int signal) {
    interrupt_signal = signal;
}
struct Interrupted {};

class InterruptGuard {
  public:
    InterruptGuard() {
        struct sigaction action {};
        action.sa_handler = on_interrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &old_int_);
        sigaction(SIGTERM, &action, &old_term_);
    }
    ~InterruptGuard() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }

  private:
    struct sigaction old_int_ {};
    struct sigaction old_term_ {};
};

struct MkdataCliOptions {
    probes::MkdataOptions dataset;
    std::optional<std::int64_t> count;
    std::string size, record_size, value_size;
    std::string shape = "3x32x32";
    std::string chunks;            // hdf5: "" = contiguous
    std::int64_t record_bytes = 0; // set by complete_options
};

CLI::App* add_kind(CLI::App& mkdata, probes::DatasetKind kind, const std::string& description,
                   MkdataCliOptions& o) {
    CLI::App* sub = mkdata.add_subcommand(probes::to_string(kind), description);
    const bool lmdb = kind == probes::DatasetKind::lmdb;
    sub->add_option(lmdb ? "dir" : "path", o.dataset.path,
                    lmdb ? "Environment directory to create" : "File to create")
        ->required();
    CLI::Option* count = add_whole_number_option<std::int64_t>(
        sub, "--count", o.count, 1, max_mkdata_count, "Number of records");
    CLI::Option* size = sub->add_option(
        "--size", o.size, "Total record bytes instead of --count (e.g. 4096, 64KiB, 256MiB, 1GiB)");
    count->excludes(size);
    const bool shaped = kind == probes::DatasetKind::npy || kind == probes::DatasetKind::hdf5;
    if (shaped) {
        sub->add_option("--shape", o.shape, "Shape of one record, e.g. 3x32x32 (\"\": scalars)")
            ->capture_default_str();
        sub->add_option("--dtype", o.dataset.dtype, "numpy element type")
            ->check(CLI::IsMember(
                {"f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"}))
            ->capture_default_str();
    }
    if (kind == probes::DatasetKind::hdf5) {
        sub->add_option("--chunks", o.chunks,
                        "Chunk shape, all dimensions, e.g. 16x3x32x32 (default: contiguous)");
        add_whole_number_option<int>(
            sub, "--gzip", [&o](int level) { o.dataset.hdf5_gzip = level; }, 1, 9,
            "gzip (deflate) level of each chunk (needs --chunks)");
        sub->add_option("--dataset", o.dataset.hdf5_dataset, "Name of the dataset in the file")
            ->capture_default_str();
    } else if (kind == probes::DatasetKind::npy) {
        add_whole_number_option<int>(
            sub, "--npy-version", [&o](int version) { o.dataset.npy_version = version; }, 1, 3,
            ".npy format version (default: the lowest that fits)");
    } else if (kind == probes::DatasetKind::raw) {
        sub->add_option("--record-size", o.record_size, "Bytes per record (e.g. 4096, 64KiB)")
            ->required();
    } else {
        sub->add_option("--value-size", o.value_size, "Bytes per value (e.g. 4096, 64KiB)")
            ->required();
    }
    add_whole_number_option<std::uint64_t>(sub, "--seed", o.dataset.seed, 0, UINT64_MAX,
                                           "Content seed: same seed, same bytes");
    sub->add_flag("--force", o.dataset.force, "Replace an existing dataset");
    return sub;
}

// Fills in what the options leave open (kind, sizes, count); false after printing an error.
bool complete_options(MkdataCliOptions& o) {
    probes::MkdataOptions& d = o.dataset;
    std::int64_t record_bytes = 0;
    if (d.kind == probes::DatasetKind::npy || d.kind == probes::DatasetKind::hdf5) {
        if (d.kind == probes::DatasetKind::hdf5 && !o.chunks.empty()) {
            auto chunks = parse_shape(o.chunks);
            if (!chunks || chunks->empty()) {
                print_error("--chunks " + o.chunks +
                            ": expected positive dimensions like 16x3x32x32, one per dimension "
                            "of the dataset (the first along the samples)");
                return false;
            }
            d.hdf5_chunks = *chunks;
        }
        auto shape = parse_shape(o.shape);
        if (!shape) {
            print_error("--shape " + o.shape +
                        ": expected positive dimensions like 3x32x32 (or \"\" for scalars)");
            return false;
        }
        d.sample_shape = *shape;
        record_bytes = probes::npy_itemsize(d.dtype, "--dtype");
        for (std::int64_t dim : d.sample_shape)
            if (__builtin_mul_overflow(record_bytes, dim, &record_bytes)) {
                print_error("--shape " + o.shape + ": the record size overflows 64 bits");
                return false;
            }
    } else {
        const bool lmdb = d.kind == probes::DatasetKind::lmdb;
        const std::string& text = lmdb ? o.value_size : o.record_size;
        auto bytes = parse_size(text);
        if (!bytes) {
            print_error(std::string(lmdb ? "--value-size " : "--record-size ") + text +
                        ": expected a size like 4096, 64KiB or 1MiB");
            return false;
        }
        d.record_bytes = record_bytes = *bytes;
    }
    o.record_bytes = record_bytes;
    if (o.count) {
        d.count = *o.count;
    } else if (!o.size.empty()) {
        auto total = parse_size(o.size);
        if (!total) {
            print_error("--size " + o.size + ": expected a size like 4096, 64KiB, 256MiB or 1GiB");
            return false;
        }
        d.count = *total / record_bytes;
        if (d.count == 0) {
            print_error("--size " + o.size + ": smaller than one record (" +
                        std::to_string(record_bytes) + " bytes)");
            return false;
        }
    } else {
        print_error(std::string("mkdata ") + probes::to_string(d.kind) +
                    ": pass --count N or --size SIZE");
        return false;
    }
    return true;
}

// Why the dataset cannot fit where it goes: its records alone need more than the file system
// has free (the file would only fill the disk before failing). Nothing when it may fit, when the
// size overflows (make_dataset says so) or when the free space cannot be read.
std::optional<std::string> space_problem(const MkdataCliOptions& o) {
    const probes::MkdataOptions& d = o.dataset;
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(o.record_bytes, d.count, &bytes)) return std::nullopt;
    const std::filesystem::path path(d.path);
    const std::string directory = path.has_parent_path() ? path.parent_path().string() : ".";
    struct statvfs fs {};
    if (::statvfs(directory.c_str(), &fs) != 0) return std::nullopt;
    const auto free_bytes = static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
    if (static_cast<unsigned long long>(bytes) <= free_bytes) return std::nullopt;
    return d.path + ": the records need " + format_bytes(bytes) +
           ", the file system holding it has " +
           format_bytes(static_cast<std::int64_t>(free_bytes)) + " free";
}

} // namespace

Runner add_mkdata(CLI::App& app) {
    auto o = std::make_shared<MkdataCliOptions>();
    CLI::App* mkdata = app.add_subcommand(
        "mkdata", "Generate a dataset of deterministic content (npy, raw records, LMDB, HDF5)");
    mkdata->require_subcommand(1);
    using probes::DatasetKind;
    CLI::App* npy = add_kind(*mkdata, DatasetKind::npy, "A .npy array: (count, *shape)", *o);
    CLI::App* raw = add_kind(*mkdata, DatasetKind::raw, "A file of fixed-size records", *o);
    CLI::App* hdf5 =
        add_kind(*mkdata, DatasetKind::hdf5, "An HDF5 file with one dataset (count, *shape)", *o);
    add_kind(*mkdata, DatasetKind::lmdb, "An LMDB environment: keys 0..count-1 (8-byte big-endian)",
             *o);
    return [o, npy, raw, hdf5] {
        o->dataset.kind = npy->parsed()    ? DatasetKind::npy
                          : raw->parsed()  ? DatasetKind::raw
                          : hdf5->parsed() ? DatasetKind::hdf5
                                           : DatasetKind::lmdb;
        ProgressBar bar(o->dataset.path);
        if (auto problem = output_name_problem("", o->dataset.path)) {
            print_error(*problem);
            return exit_bad_input;
        }
        try {
            if (!complete_options(*o)) return exit_bad_input;
            if (auto problem = space_problem(*o)) {
                print_error(*problem);
                return exit_internal;
            }
            o->dataset.progress = [&bar](std::int64_t done, std::int64_t total) {
                if (interrupt_signal != 0) throw Interrupted{};
                bar.update(done, total);
            };
            probes::DatasetLayout layout;
            {
                InterruptGuard guard;
                layout = probes::make_dataset(o->dataset);
            }
            bar.clear();
            std::error_code error;
            const auto bytes = std::filesystem::file_size(layout.data_file, error);
            std::cout << "wrote " << layout.path << ": " << layout.description << ", "
                      << (error ? std::string("size unknown")
                                : format_bytes(static_cast<std::int64_t>(bytes)))
                      << "\n";
            return exit_ok; // main() checks standard output
        } catch (const probes::DatasetError& e) {
            bar.clear();
            print_error(e.what());
            // A full disk is "the output could not be written" (1), not bad input.
            return dynamic_cast<const probes::DatasetWriteError*>(&e) ? exit_internal
                                                                      : exit_bad_input;
        } catch (const Interrupted&) {
            bar.clear();
            print_error("interrupted; nothing written to " + o->dataset.path);
            return 128 + interrupt_signal.load();
        }
    };
}

} // namespace loaderlens::cli
