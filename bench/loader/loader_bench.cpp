// SPDX-License-Identifier: MIT
// The reference loader's speed, against baselines measured in the same run:
//
// 1. Throughput: `loaderlens load` against the real torch.utils.data.DataLoader
//    (bench/loader/pytorch_loader.py, Debian's python3-torch) over the same .npy file, same
//    workers, batch, prefetch and pattern (shuffle), page cache warm, the two alternated over the
//    repetitions (the first of a pair swaps every repetition). Both count an epoch from the moment
//    its workers exist to its last batch: the reference loader's epoch clock starts after the
//    fork, and PyTorch's is read just after iter(loader) returned ("after_start"; the figure with
//    the fork included is printed too). Ratio per repetition = ours / PyTorch samples/s; target
//    >= 5x on the median. Skipped, with a message, when `python3 -c "import torch, numpy"` fails.
//
// 2. Copy bandwidth of samples of 64 KiB and more (64 and 256 KiB, 192 MiB per size, far more
//    than the 32 MiB L3): `loaderlens load --workers 0 --pattern sequential` (main reads each
//    sample straight into its batch buffer: no workers, no pipes, only the reading path), with
//    --read mmap-copy (two copies per byte: the private copy np.array()/bytes() makes, then the
//    collate copy into the batch) and --read mmap-view (one copy), against memcpy loops run in
//    this process over the same bytes in the same chunk size, timed the same way (wall clock of a
//    pass = an epoch; the median of the passes/epochs after the first):
//      plain memcpy        chunks between two anonymous buffers far larger than the caches: the
//                          "plain memcpy bandwidth" the target is a share of;
//      same copies         what the loader does minus the loader: out of a kept read-only
//                          MAP_SHARED map of the same cached file, through one private chunk for
//                          mmap-copy, into the batch destination. "vs same copies" is then the
//                          loader's own overhead.
//    Two batch sizes: batch 1 (the batch buffer is one sample and stays in L2: the definition of
//    the target) and a 64 MiB batch buffer (beyond L3: every copy into the batch goes to DRAM).
//    The loader's first epoch (its map just made: page faults included) is compared with a memcpy
//    pass out of a map made anew for that pass. Ratios are taken per repetition, where the
//    measurements alternate (forward then backward order); medians and ranges are printed.
//    Target: loader mmap-copy at batch 1 >= 80% of plain memcpy (median).
//
// Prints MISSED for a missed target and still exits 0; exits non-zero only when a measurement
// could not be made (a tool failed, a JSON answer was malformed).
#include "targets.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>
#include <vector>

#ifndef LOADERLENS_CLI_PATH
#define LOADERLENS_CLI_PATH "loaderlens"
#endif
#ifndef LOADERLENS_PYTORCH_LOADER
#define LOADERLENS_PYTORCH_LOADER "pytorch_loader.py"
#endif

namespace {

using namespace loaderlens::bench;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Options {
    std::string cli = LOADERLENS_CLI_PATH;
    std::string python = "/usr/bin/python3";
    std::string torch_script = LOADERLENS_PYTORCH_LOADER;
    int repetitions = 5;
    // Throughput: 3x64x64 float32 samples (48 KiB, an ImageNet-like crop), 4096 of them (192 MiB).
    int workers = 2, batch = 32;
    int ours_epochs = 30, torch_epochs = 3;
    // Copy: 192 MiB per sample size, far more than the 32 MiB of L3.
    std::vector<std::size_t> copy_kib{64, 256};
    std::size_t copy_mib = 192;
    std::size_t large_batch_mib = 64; // the large batch buffer: twice this machine's L3
    int copy_epochs = 16;
    double target_ratio = 5.0, target_copy = 0.80;
};

// ---------------------------------------------------------------------------------------------
// Child processes

std::string join(const std::vector<std::string>& argv) {
    std::string text;
    for (const auto& a : argv)
        text += (text.empty() ? "" : " ") + a;
    return text;
}

// Runs argv with stdout captured (stderr passes through unless quiet_stderr); returns its stdout,
// or nullopt when it could not run or did not exit with 0 (*exit_code says how it ended).
std::optional<std::string> run(const std::vector<std::string>& argv, bool quiet_stderr = false,
                               int* exit_code = nullptr) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) throw SetupError(std::string("pipe: ") + std::strerror(errno));
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw SetupError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        setpgid(0, 0); // its own group: the fatal-signal cleanup kills it with its workers
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(126);
        dup2(out[1], STDOUT_FILENO);
        if (quiet_stderr) {
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) dup2(null, STDERR_FILENO);
        }
        std::vector<char*> args;
        for (const auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", argv[0].c_str(), std::strerror(errno));
        _exit(127);
    }
    guard_process(pid);
    close(out[1]);
    std::string text;
    char buffer[65536];
    for (;;) {
        ssize_t n = read(out[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    unguard_process(pid);
    // init_cleanup made us a subreaper: reap any orphaned grandchild (a worker whose loader died).
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    return text;
}

json run_json(const std::vector<std::string>& argv) {
    int code = 0;
    const auto text = run(argv, false, &code);
    if (!text) throw SetupError("`" + join(argv) + "` failed (exit " + std::to_string(code) + ")");
    try {
        return json::parse(*text);
    } catch (const std::exception& e) {
        throw SetupError("`" + join(argv) + "` printed no valid JSON: " + e.what());
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t mid = v.size() / 2;
    return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}
double lowest(const std::vector<double>& v) {
    return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}
double highest(const std::vector<double>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// ---------------------------------------------------------------------------------------------
// Datasets

struct Dataset {
    std::string path;
    std::size_t records = 0, record_bytes = 0, data_offset = 0, file_bytes = 0;
};

Dataset make_dataset(const Options& o, Scratch& scratch, const std::string& name,
                     const std::string& shape, std::size_t records, std::size_t record_bytes) {
    Dataset d{scratch.path_for(name), records, record_bytes};
    std::fprintf(stderr, "generating %s (%zu x %zu KiB)...\n", name.c_str(), records,
                 record_bytes / 1024);
    if (!run({o.cli, "mkdata", "npy", d.path, "--count", std::to_string(records), "--shape", shape,
              "--dtype", "f4"}))
        throw SetupError("`loaderlens mkdata npy " + d.path + "` failed");
    struct stat st {};
    if (stat(d.path.c_str(), &st) != 0) throw SetupError(d.path + ": not created");
    d.file_bytes = static_cast<std::size_t>(st.st_size);
    if (d.file_bytes < records * record_bytes) throw SetupError(d.path + ": shorter than expected");
    d.data_offset = d.file_bytes - records * record_bytes; // the .npy header
    // Flushed so that writeback does not run during the timings, then read whole: the page
    // cache is warm for every reader that follows.
    int fd = open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw SetupError(d.path + ": " + std::strerror(errno));
    fsync(fd);
    std::vector<char> buffer(1 << 20);
    while (read(fd, buffer.data(), buffer.size()) > 0) {
    }
    close(fd);
    return d;
}

// ---------------------------------------------------------------------------------------------
// 1. Throughput against PyTorch

struct Throughput {
    std::vector<double> ours, torch, torch_with_start, ratio, ratio_with_start;
};

double ours_samples_per_s(const json& j) {
    double samples = 0, seconds = 0;
    for (const auto& e : j.at("epochs")) {
        samples += e.at("samples").get<double>();
        seconds += e.at("seconds").get<double>();
    }
    if (seconds <= 0) throw SetupError("loaderlens load reported no time");
    return samples / seconds;
}

std::pair<double, double> torch_samples_per_s(const json& j) {
    double samples = 0, after_start = 0, with_start = 0;
    for (const auto& e : j.at("epochs")) {
        samples += e.at("samples").get<double>();
        after_start += e.at("after_start_s").get<double>();
        with_start += e.at("epoch_s").get<double>();
    }
    if (after_start <= 0 || with_start <= 0) throw SetupError("pytorch_loader.py reported no time");
    return {samples / after_start, samples / with_start};
}

std::optional<std::string> torch_missing(const Options& o) {
    if (access(o.python.c_str(), X_OK) != 0) return o.python + " is not installed";
    if (access(o.torch_script.c_str(), R_OK) != 0) return o.torch_script + " is missing";
    if (!run({o.python, "-c", "import torch, numpy"}, true))
        return o.python + " cannot import torch and numpy (python3-torch, python3-numpy)";
    return std::nullopt;
}

Throughput measure_throughput(const Options& o, const Dataset& d) {
    const std::string workers = std::to_string(o.workers), batch = std::to_string(o.batch);
    auto ours = [&](int seed, int epochs) {
        return run_json({o.cli, "load", d.path, "--workers", workers, "--batch", batch, "--pattern",
                         "shuffle", "--prefetch", "2", "--read", "mmap-view", "--seed",
                         std::to_string(seed), "--epochs", std::to_string(epochs), "--json"});
    };
    auto torch = [&](int seed, int epochs) {
        return run_json({o.python, o.torch_script, d.path, "--workers", workers, "--batch", batch,
                         "--pattern", "shuffle", "--read", "mmap-view", "--seed",
                         std::to_string(seed), "--epochs", std::to_string(epochs)});
    };
    std::fprintf(stderr, "throughput: warm-up of both loaders...\n");
    ours(1000, 1);
    torch(1000, 1);
    Throughput t;
    for (int rep = 0; rep < o.repetitions; ++rep) {
        std::fprintf(stderr, "throughput: repetition %d/%d\n", rep + 1, o.repetitions);
        double mine = 0;
        std::pair<double, double> theirs;
        if (rep % 2 == 0) {
            mine = ours_samples_per_s(ours(rep, o.ours_epochs));
            theirs = torch_samples_per_s(torch(rep, o.torch_epochs));
        } else {
            theirs = torch_samples_per_s(torch(rep, o.torch_epochs));
            mine = ours_samples_per_s(ours(rep, o.ours_epochs));
        }
        t.ours.push_back(mine);
        t.torch.push_back(theirs.first);
        t.torch_with_start.push_back(theirs.second);
        t.ratio.push_back(mine / theirs.first);
        t.ratio_with_start.push_back(mine / theirs.second);
    }
    return t;
}

void print_throughput(const Options& o, const Dataset& d, const Throughput& t) {
    std::printf("\n== throughput: reference loader vs torch.utils.data.DataLoader ==\n");
    std::printf("%zu x %zu KiB float32 .npy (%.0f MiB, page cache warm), %d workers, batch %d, "
                "prefetch 2, shuffle, non-persistent workers; %d repetitions alternated\n",
                d.records, d.record_bytes / 1024,
                static_cast<double>(d.records * d.record_bytes) / mib, o.workers, o.batch,
                o.repetitions);
    std::printf("%-4s %16s %16s %10s %22s\n", "rep", "ours samples/s", "torch samples/s", "ratio",
                "(torch incl. fork)");
    for (std::size_t i = 0; i < t.ratio.size(); ++i)
        std::printf("%-4zu %16.0f %16.0f %9.2fx %13.0f %6.2fx\n", i + 1, t.ours[i], t.torch[i],
                    t.ratio[i], t.torch_with_start[i], t.ratio_with_start[i]);
    const double m = median(t.ratio);
    std::printf("median: ours %.0f samples/s, torch %.0f samples/s: %.2fx (range %.2f-%.2fx; "
                "%.2fx counting PyTorch's worker start); target >= %.0fx: %s\n",
                median(t.ours), median(t.torch), m, lowest(t.ratio), highest(t.ratio),
                median(t.ratio_with_start), o.target_ratio,
                m >= o.target_ratio ? "PASS" : "MISSED");
}

// 2. Copy bandwidth against memcpy

// Keeps the compiler from proving a copy useless.
inline void escape(const void* p) {
    asm volatile("" : : "r"(p) : "memory");
}

// A private anonymous buffer with every page faulted in (4 KiB pages, as malloc'd memory).
struct Buffer {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    explicit Buffer(std::size_t n) : bytes(n) {
        void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) throw SetupError(std::string("mmap: ") + std::strerror(errno));
        data = static_cast<std::byte*>(m);
        std::memset(data, 0x5a, n);
    }
    ~Buffer() { munmap(data, bytes); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

// The dataset mapped read-only and shared, as the loader maps it.
struct FileMap {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    explicit FileMap(const Dataset& d) : bytes(d.file_bytes) {
        int fd = open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) throw SetupError(d.path + ": " + std::strerror(errno));
        void* m = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) throw SetupError(d.path + ": mmap: " + std::strerror(errno));
        data = static_cast<std::byte*>(m);
    }
    ~FileMap() { munmap(data, bytes); }
    FileMap(const FileMap&) = delete;
    FileMap& operator=(const FileMap&) = delete;
};

// One pass over the samples: sample i copied to dest + (i mod dest_slots) * chunk, through
// `via` first when given (the private copy of mmap-copy). Returns MiB/s of sample bytes.
double copy_pass(const std::byte* source, std::size_t chunks, std::size_t chunk, std::byte* dest,
                 std::size_t dest_slots, std::byte* via = nullptr) {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < chunks; ++i) {
        std::byte* out = dest + (i % dest_slots) * chunk;
        if (via) {
            std::memcpy(via, source + i * chunk, chunk);
            escape(via);
            std::memcpy(out, via, chunk);
        } else {
            std::memcpy(out, source + i * chunk, chunk);
        }
        escape(out);
    }
    const double s = seconds_since(start);
    return static_cast<double>(chunks * chunk) / static_cast<double>(mib) / s;
}

// The rows of a copy table. Each loader row has a memcpy row doing the same copies without the
// loader ("same copies"); every row is also compared with plain memcpy (the target's baseline).
enum Row {
    plain,      // memcpy large -> large: both buffers far larger than the caches
    small_view, // kept map -> one batch-1 destination (what mmap-view does at batch 1)
    small_copy, // kept map -> private chunk -> batch-1 destination (mmap-copy at batch 1)
    large_view, // kept map -> 64 MiB batch destination (mmap-view, batch buffer beyond L3)
    large_copy, // kept map -> private chunk -> 64 MiB destination
    fresh_view, // a fresh map each pass -> batch-1 destination: page faults included
    fresh_copy, // a fresh map each pass -> private chunk -> batch-1 destination
    loader_small_view,
    loader_small_copy,
    loader_large_view,
    loader_large_copy,
    loader_first_view, // epoch 0 of loader_small_*: the map is fresh, as in fresh_view
    loader_first_copy,
    rows
};

struct RowInfo {
    const char* name;
    Row same; // the memcpy row doing the same copies (itself for memcpy rows)
};
const RowInfo row_info[rows] = {
    {"memcpy large->large (plain)", plain},           {"memcpy map->batch", small_view},
    {"memcpy map->private->batch", small_copy},       {"memcpy map->batch", large_view},
    {"memcpy map->private->batch", large_copy},       {"memcpy fresh map->batch", fresh_view},
    {"memcpy fresh map->private->batch", fresh_copy}, {"loader --read mmap-view", small_view},
    {"loader --read mmap-copy", small_copy},          {"loader --read mmap-view", large_view},
    {"loader --read mmap-copy", large_copy},          {"loader mmap-view, epoch 0", fresh_view},
    {"loader mmap-copy, epoch 0", fresh_copy},
};

struct CopyResult {
    std::size_t chunk = 0, large_batch = 0;
    std::vector<double> mib_s[rows]; // per repetition
    std::vector<double> vs_plain[rows], vs_same[rows];
};

// Runs the loader: the median MiB/s of its epochs after the first, and the first's.
std::pair<double, double> loader_mib_s(const Options& o, const Dataset& d, const char* read,
                                       std::size_t batch) {
    const json j = run_json({o.cli, "load", d.path, "--workers", "0", "--batch",
                             std::to_string(batch), "--pattern", "sequential", "--read", read,
                             "--epochs", std::to_string(o.copy_epochs), "--json"});
    std::vector<double> steady;
    double first = 0;
    for (const auto& e : j.at("epochs")) {
        const double v = e.at("mib_per_s").get<double>();
        if (e.at("epoch").get<int>() == 0)
            first = v;
        else
            steady.push_back(v);
    }
    if (steady.empty() || first <= 0) throw SetupError("loaderlens load: too few epochs");
    return {median(steady), first};
}

CopyResult measure_copy(const Options& o, const Dataset& d) {
    CopyResult r;
    const std::size_t chunks = d.records, chunk = d.record_bytes, total = chunks * chunk;
    r.chunk = chunk;
    r.large_batch = std::max<std::size_t>(1, o.large_batch_mib * mib / chunk);
    Buffer source(total), dest(total), batch1(chunk), batch_large(r.large_batch * chunk),
        private_copy(chunk);
    std::memcpy(source.data, FileMap(d).data + d.data_offset, total); // the same bytes
    FileMap kept(d);
    const std::byte* mapped = kept.data + d.data_offset;
    copy_pass(mapped, chunks, chunk, batch1.data, 1); // populates the kept map's page tables

    // The median pass after the first, as the loader's figure is the median epoch after the
    // first.
    auto passes = [&](auto&& pass) {
        std::vector<double> v;
        pass();
        for (int p = 1; p < o.copy_epochs; ++p)
            v.push_back(pass());
        return median(v);
    };
    // One measurement step fills one or two rows (a loader run gives its epoch 0 as well).
    auto step = [&](int k, double values[rows]) {
        switch (k) {
        case 0:
            values[plain] =
                passes([&] { return copy_pass(source.data, chunks, chunk, dest.data, chunks); });
            break;
        case 1:
            values[small_view] =
                passes([&] { return copy_pass(mapped, chunks, chunk, batch1.data, 1); });
            break;
        case 2:
            values[small_copy] = passes([&] {
                return copy_pass(mapped, chunks, chunk, batch1.data, 1, private_copy.data);
            });
            break;
        case 3:
            values[large_view] = passes(
                [&] { return copy_pass(mapped, chunks, chunk, batch_large.data, r.large_batch); });
            break;
        case 4:
            values[large_copy] = passes([&] {
                return copy_pass(mapped, chunks, chunk, batch_large.data, r.large_batch,
                                 private_copy.data);
            });
            break;
        case 5:
        case 10:
            values[k == 5 ? fresh_view : fresh_copy] = passes([&] {
                const auto start = Clock::now();
                FileMap fresh(d); // mmap and the faults are in the pass; munmap is not
                copy_pass(fresh.data + d.data_offset, chunks, chunk, batch1.data, 1,
                          k == 5 ? nullptr : private_copy.data);
                return static_cast<double>(total) / static_cast<double>(mib) / seconds_since(start);
            });
            break;
        case 6:
            std::tie(values[loader_small_view], values[loader_first_view]) =
                loader_mib_s(o, d, "mmap-view", 1);
            break;
        case 7:
            std::tie(values[loader_small_copy], values[loader_first_copy]) =
                loader_mib_s(o, d, "mmap-copy", 1);
            break;
        case 8:
            values[loader_large_view] = loader_mib_s(o, d, "mmap-view", r.large_batch).first;
            break;
        case 9:
            values[loader_large_copy] = loader_mib_s(o, d, "mmap-copy", r.large_batch).first;
            break;
        }
    };
    constexpr int steps = 11;
    for (int rep = 0; rep < o.repetitions; ++rep) {
        std::fprintf(stderr, "copy %zu KiB: repetition %d/%d\n", chunk / 1024, rep + 1,
                     o.repetitions);
        double values[rows] = {};
        for (int i = 0; i < steps; ++i) // forward, then backward: no step always goes first
            step(rep % 2 == 0 ? i : steps - 1 - i, values);
        for (int i = 0; i < rows; ++i) {
            r.mib_s[i].push_back(values[i]);
            r.vs_plain[i].push_back(values[i] / values[plain]);
            r.vs_same[i].push_back(values[i] / values[row_info[i].same]);
        }
    }
    return r;
}

void print_copy(const Options& o, const Dataset& d, const CopyResult& r) {
    std::printf("\n== copy bandwidth: %zu KiB samples, %zu MiB .npy (page cache warm), "
                "loaderlens load --workers 0 --pattern sequential; %d repetitions ==\n",
                r.chunk / 1024, d.records * d.record_bytes / mib, o.repetitions);
    std::printf("MiB/s of sample bytes: median (min-max) over the repetitions; ratios per "
                "repetition, median (min-max)\n");
    std::printf("%-34s %18s %18s %18s\n", "", "MiB/s", "vs plain memcpy", "vs same copies");
    auto line = [&](int i) {
        char a[40], b[40], c[40];
        std::snprintf(a, sizeof a, "%.0f (%.0f-%.0f)", median(r.mib_s[i]), lowest(r.mib_s[i]),
                      highest(r.mib_s[i]));
        std::snprintf(b, sizeof b, "%.0f%% (%.0f-%.0f)", 100 * median(r.vs_plain[i]),
                      100 * lowest(r.vs_plain[i]), 100 * highest(r.vs_plain[i]));
        if (row_info[i].same == i)
            std::snprintf(c, sizeof c, "-");
        else
            std::snprintf(c, sizeof c, "%.0f%% (%.0f-%.0f)", 100 * median(r.vs_same[i]),
                          100 * lowest(r.vs_same[i]), 100 * highest(r.vs_same[i]));
        std::printf("  %-32s %18s %18s %18s\n", row_info[i].name, a, b, c);
    };
    std::printf("plain memcpy: %zu KiB chunks between two %zu MiB buffers\n", r.chunk / 1024,
                d.records * d.record_bytes / mib);
    line(plain);
    std::printf("batch 1: the batch buffer is one sample (%zu KiB, stays in L2)\n", r.chunk / 1024);
    for (int i : {small_view, loader_small_view, small_copy, loader_small_copy})
        line(i);
    std::printf("batch %zu: the batch buffer is %zu MiB (beyond L3)\n", r.large_batch,
                r.large_batch * r.chunk / mib);
    for (int i : {large_view, loader_large_view, large_copy, loader_large_copy})
        line(i);
    std::printf("first epoch, batch 1: map just made, page faults included\n");
    for (int i : {fresh_view, loader_first_view, fresh_copy, loader_first_copy})
        line(i);
    const double m = median(r.vs_plain[loader_small_copy]);
    std::printf("target: loader mmap-copy (two copies per byte), batch 1, >= %.0f%% of plain "
                "memcpy: %.0f%% %s (mmap-view, one copy: %.0f%%; with a %zu MiB batch buffer "
                "mmap-copy %.0f%%, mmap-view %.0f%%)\n",
                100 * o.target_copy, 100 * m, m >= o.target_copy ? "PASS" : "MISSED",
                100 * median(r.vs_plain[loader_small_view]), r.large_batch * r.chunk / mib,
                100 * median(r.vs_plain[loader_large_copy]),
                100 * median(r.vs_plain[loader_large_view]));
}

int usage() {
    std::fprintf(stderr, "usage: loaderlens_bench_loader [--cli PATH] [--python PATH] "
                         "[--torch-script PATH] [--repetitions N] [--workers N] [--batch N]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    init_cleanup();
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string value = argv[++i];
        try {
            if (arg == "--cli")
                o.cli = value;
            else if (arg == "--python")
                o.python = value;
            else if (arg == "--torch-script")
                o.torch_script = value;
            else if (arg == "--repetitions")
                o.repetitions = std::max(1, std::stoi(value));
            else if (arg == "--workers")
                o.workers = std::stoi(value);
            else if (arg == "--batch")
                o.batch = std::stoi(value);
            else
                return usage();
        } catch (const std::exception&) {
            return usage();
        }
    }
    if (access(o.cli.c_str(), X_OK) != 0) {
        std::fprintf(stderr,
                     "loader bench: %s is not an executable (build the loaderlens target)\n",
                     o.cli.c_str());
        return 1;
    }
    try {
        Scratch scratch;
        const auto missing = torch_missing(o);
        if (missing) {
            std::printf("\n== throughput: reference loader vs torch.utils.data.DataLoader ==\n"
                        "SKIPPED: %s; `bash scripts/setup.sh --bench` installs python3-torch\n",
                        missing->c_str());
        } else {
            const Dataset d = make_dataset(o, scratch, "throughput.npy", "3x64x64", 4096, 48 << 10);
            const Throughput t = measure_throughput(o, d);
            print_throughput(o, d, t);
            unlink(d.path.c_str()); // frees its page cache for what follows
        }
        std::fflush(stdout);
        for (std::size_t kib : o.copy_kib) {
            const std::size_t record = kib << 10;
            const Dataset d = make_dataset(o, scratch, "copy-" + std::to_string(kib) + "k.npy",
                                           std::to_string(record / 4096) + "x1024",
                                           (o.copy_mib * mib) / record, record);
            const CopyResult r = measure_copy(o, d);
            print_copy(o, d, r);
            std::fflush(stdout);
            unlink(d.path.c_str()); // frees its page cache before the next size
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "loader bench: %s\n", e.what());
        return 1;
    }
}
