// SPDX-License-Identifier: MIT
// The reference loader's process model, seen from outside as a user sees it: `loaderlens load`
// and `replay` on generated datasets, their events, their recordings, and bad input.
#include "replay_support.hpp"

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

// Runs `loaderlens load ARGS...` with the loader's events going to a file; returns the events.
std::vector<json> load_events(const TempDir& dir, const std::vector<std::string>& args) {
    const std::string events = dir.file("events.jsonl");
    std::filesystem::remove(events);
    std::vector<std::string> argv{cli_path(), "load", "--quiet"};
    argv.insert(argv.end(), args.begin(), args.end());
    setenv("LOADERLENS_LOADER_EVENTS", events.c_str(), 1);
    auto result = run(argv);
    unsetenv("LOADERLENS_LOADER_EVENTS");
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    std::vector<json> out;
    std::ifstream in(events);
    for (std::string line; std::getline(in, line);)
        out.push_back(json::parse(line));
    return out;
}

// The data part of a .npy file, read with the format's own rules (magic, version, header
// length), not with the code under test.
std::string npy_data(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), {}};
    BOOST_REQUIRE(bytes.size() >= 12 && bytes.compare(0, 6, "\x93NUMPY") == 0);
    const auto byte = [&](std::size_t i) {
        return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i]));
    };
    const std::size_t data_offset =
        bytes[6] == 1 ? 10 + (byte(8) | byte(9) << 8)
                      : 12 + (byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24);
    BOOST_REQUIRE(data_offset % 64 == 0); // the format aligns the data
    return bytes.substr(data_offset);
}

std::vector<json> of_kind(const std::vector<json>& events, const std::string& kind) {
    std::vector<json> out;
    for (const auto& e : events)
        if (e["event"] == kind) out.push_back(e);
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(loader)

BOOST_AUTO_TEST_CASE(batch_k_goes_to_worker_k_mod_w) {
    TempDir dir;
    const std::string data = dir.file("data.raw");
    mkdata({"raw", data, "--count", "100", "--record-size", "4096"});
    // 10 batches of 10 over 3 workers: 0,3,6,9 | 1,4,7 | 2,5,8.
    auto events = load_events(dir, {data, "--record-size", "4096", "--pattern", "sequential",
                                    "--batch", "10", "--workers", "3"});
    auto epochs = of_kind(events, "epoch");
    BOOST_REQUIRE_EQUAL(epochs.size(), 1u);
    BOOST_TEST(epochs[0]["batches_per_worker"] == json::array({4, 3, 3}));
    BOOST_TEST(epochs[0]["samples"] == 100);
    BOOST_TEST(epochs[0]["bytes_read"] == 100 * 4096);
    BOOST_TEST(of_kind(events, "end").at(0)["status"] == "ok");
    // drop_last: 9 full batches of 11, the 10th (1 sample) dropped.
    events = load_events(dir, {data, "--record-size", "4096", "--pattern", "shuffle", "--batch",
                               "11", "--drop-last", "--workers", "4"});
    epochs = of_kind(events, "epoch");
    BOOST_TEST(epochs.at(0)["batches_per_worker"] == json::array({3, 2, 2, 2}));
    BOOST_TEST(epochs.at(0)["samples"] == 99);
}

BOOST_AUTO_TEST_CASE(reforked_workers_are_new_processes_persistent_ones_stay) {
    TempDir dir;
    const std::string data = dir.file("data.npy");
    mkdata({"npy", data, "--count", "64", "--shape", "1024", "--dtype", "u1"});
    auto reforked = of_kind(
        load_events(dir, {data, "--workers", "2", "--epochs", "3", "--batch", "8"}), "worker");
    BOOST_REQUIRE_EQUAL(reforked.size(), 6u);
    std::set<int> pids;
    for (std::size_t i = 0; i < reforked.size(); ++i) {
        pids.insert(reforked[i]["pid"].get<int>());
        BOOST_TEST(reforked[i]["worker"] == static_cast<int>(i % 2));
        BOOST_TEST(reforked[i]["generation"] == static_cast<int>(i / 2));
    }
    BOOST_TEST(pids.size() == 6u);
    // A new base seed per generation, + worker id (as PyTorch seeds its workers).
    BOOST_TEST(reforked[1]["seed"].get<std::uint64_t>() ==
               reforked[0]["seed"].get<std::uint64_t>() + 1);
    BOOST_TEST(reforked[2]["seed"] != reforked[0]["seed"]);

    auto persistent =
        load_events(dir, {data, "--workers", "2", "--epochs", "3", "--batch", "8", "--persistent"});
    BOOST_TEST(of_kind(persistent, "worker").size() == 2u);
    for (const auto& epoch : of_kind(persistent, "epoch"))
        BOOST_TEST(epoch["generation"] == 0);
}

// Every reader delivers the file's bytes, checked against a checksum the test computes from
// the .npy file itself. The loader's checksum (probes/src/loader.cpp, Loader::consume) is the sum
// over batches of one little-endian 8-byte word per 4096 bytes of each batch, as main consumes it.
// Two layouts: 2048-byte samples in batches of 2, where the words are the first bytes of every
// other sample, and 4104-byte samples in batches of 16, where word i of a batch is the 8 bytes at
// 4104 - 8i of its sample i - 1: the ends of the samples, so a reader that cut a sample short, or
// shifted it, changes the sum. The LMDB datasets hold the same values (same --seed).
BOOST_AUTO_TEST_CASE(every_reader_delivers_the_same_bytes) {
    TempDir dir;
    struct Layout {
        std::int64_t count, sample_bytes, batch;
    };
    for (const Layout layout : {Layout{200, 2048, 2}, Layout{64, 4104, 16}}) {
        const std::string size = std::to_string(layout.sample_bytes);
        const std::string npy = dir.file("data" + size + ".npy");
        const std::string lmdb = dir.file("data" + size + ".lmdb");
        mkdata({"npy", npy, "--count", std::to_string(layout.count), "--shape", size, "--dtype",
                "u1", "--seed", "7"});
        mkdata({"lmdb", lmdb, "--count", std::to_string(layout.count), "--value-size", size,
                "--seed", "7"});
        const std::string data = npy_data(npy);
        BOOST_REQUIRE_EQUAL(static_cast<std::int64_t>(data.size()),
                            layout.count * layout.sample_bytes);
        // Sequential batches of `batch` samples, the last one short.
        std::uint64_t expected = 0;
        const auto batch_bytes = static_cast<std::size_t>(layout.batch * layout.sample_bytes);
        for (std::size_t start = 0; start < data.size(); start += batch_bytes) {
            const std::size_t bytes = std::min(batch_bytes, data.size() - start);
            for (std::size_t offset = 0; offset + 8 <= bytes; offset += 4096) {
                std::uint64_t word;
                std::memcpy(&word, data.data() + start + offset, sizeof word);
                expected += word;
            }
        }
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {npy, "--read", "mmap-view"},
                 {npy, "--read", "mmap-copy"},
                 {npy, "--read", "pread", "--advice", "dontneed-after-use"},
                 {npy, "--workers", "0"},
                 {lmdb, "--lmdb-open", "worker"},
                 {lmdb, "--lmdb-open", "parent", "--readahead", "off", "--read", "mmap-copy"}}) {
            auto full = args;
            full.insert(full.end(), {"--pattern", "sequential", "--batch",
                                     std::to_string(layout.batch), "--workers", "1"});
            if (std::find(args.begin(), args.end(), "--workers") != args.end())
                full.erase(full.end() - 2, full.end()); // the case's own --workers 0 wins
            BOOST_TEST_CONTEXT(size << "-byte samples, " << args[1] << " " << args[2]) {
                auto events = load_events(dir, full);
                auto end = of_kind(events, "end");
                BOOST_REQUIRE_EQUAL(end.size(), 1u);
                BOOST_TEST(end[0]["status"] == "ok");
                BOOST_TEST(end[0]["checksum"].get<std::uint64_t>() == expected);
                BOOST_TEST(of_kind(events, "epoch").at(0)["bytes_read"] ==
                           layout.count * layout.sample_bytes);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(replay_records_epochs_workers_and_exact_slots) {
    TempDir dir;
    const std::string data = dir.file("data.npy"), out = dir.file("run.db");
    mkdata({"npy", data, "--count", "512", "--shape", "4096", "--dtype", "u1"});
    auto result = replay(out, {data, "--workers", "3", "--epochs", "2", "--batch", "16",
                               "--step-time", "10ms", "--epoch-pause", "300ms"});
    BOOST_TEST(result.out.find("Loader (the reference loader") != std::string::npos);
    Recording recording(out);
    BOOST_TEST(recording.meta("state") == "finished");
    const LoaderRun run = recording.loader_run();
    BOOST_TEST(run.status == "ok");
    BOOST_REQUIRE_EQUAL(run.epochs.size(), 2u);
    for (const auto& epoch : run.epochs) {
        BOOST_TEST(epoch.samples == 512);
        BOOST_TEST(epoch.bytes_read == 512 * 4096);
        BOOST_TEST(epoch.end_ms > epoch.start_ms);
    }
    BOOST_TEST(run.workers.size() == 6u);
    // Markers carry the loader's own clock: they match its epoch times to the millisecond.
    BOOST_TEST(std::abs(marker_time(recording, "epoch 1 start") - run.epochs[1].start_ms) <= 1);
    auto workers = workers_of(recording);
    BOOST_REQUIRE_EQUAL(workers.size(), 6u);
    for (std::size_t i = 0; i < workers.size(); ++i) {
        BOOST_TEST(workers[i].slot == static_cast<int>(i % 3));
        BOOST_TEST(workers[i].generation == static_cast<int>(i / 3));
        BOOST_TEST(workers[i].comm == "ll_data_worker");
        BOOST_TEST(workers[i].ppid == main_of(recording).key.pid);
    }
}

BOOST_AUTO_TEST_CASE(bad_input_is_one_line_and_exit_2) {
    TempDir dir;
    const std::string good = dir.file("good.npy");
    mkdata({"npy", good, "--count", "16", "--shape", "256", "--dtype", "f4"});
    // A broken header, a truncated file, an LMDB path that is not an environment, a trace
    // index past the end, and options that contradict the dataset.
    const std::string bad_magic = dir.file("bad_magic.npy"), truncated = dir.file("short.npy");
    std::filesystem::copy_file(good, bad_magic);
    std::filesystem::copy_file(good, truncated);
    {
        std::fstream f(bad_magic, std::ios::in | std::ios::out | std::ios::binary);
        f.write("XNUMPY", 6);
    }
    std::filesystem::resize_file(truncated, std::filesystem::file_size(good) - 100);
    std::filesystem::create_directory(dir.file("not_lmdb"));
    std::ofstream(dir.file("trace.txt")) << "0\n3\n16\n";
    struct Case {
        std::vector<std::string> args;
        std::string expected;
    };
    const std::vector<Case> cases{
        {{bad_magic}, "bad_magic.npy"},
        {{truncated}, "truncated"},
        {{dir.file("not_lmdb")}, "not an LMDB environment"},
        {{good, "--pattern", "trace", "--trace", dir.file("trace.txt")}, "trace.txt:3"},
        {{good, "--readahead", "off"}, "--readahead off"},
        {{good, "--pattern", "bogus"}, "--pattern bogus"},
        {{good, "--window", "0", "--pattern", "windows"}, "--window"},
        {{good, "--epochs", "0"}, "--epochs"},
        {{good, "--workers", "4", "--prefetch", "1025"}, "batches can be in flight"},
        {{good, "--prefetch", "1073741825"}, "--prefetch"},
        {{good, "--record-size", "100"}, "--record-size is for raw datasets"},
    };
    for (const auto& c : cases) {
        for (const char* command : {"load", "replay"}) {
            const std::string out = dir.file("never.db");
            std::vector<std::string> argv{cli_path(), command};
            argv.insert(argv.end(), c.args.begin(), c.args.end());
            if (std::string(command) == "replay") argv.insert(argv.end(), {"-o", out});
            auto result = run(argv);
            BOOST_TEST_CONTEXT(command << " " << c.args.front() << ": " << result.err) {
                BOOST_TEST(result.exit_code == 2);
                BOOST_TEST(one_line(result.err));
                BOOST_TEST(result.err.find(c.expected) != std::string::npos);
                BOOST_TEST(!std::filesystem::exists(out), "bad input left a recording");
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(buffers_are_sized_from_the_largest_possible_batch) {
    TempDir dir;
    // A dataset whose name looks like an option goes through replay to its child `load` intact.
    const std::string data = dir.file("-tiny.npy"), out = dir.file("run.db");
    mkdata({"npy", data, "--count", "100", "--shape", "256", "--dtype", "f4"});
    // --batch far beyond the dataset: one batch of 100 samples, buffers of 2 x 2 x 100 KiB.
    replay(out, {"--workers", "2", "--batch", "10000000", "--", data});
    const LoaderRun run = Recording(out).loader_run();
    BOOST_REQUIRE_EQUAL(run.epochs.size(), 1u);
    BOOST_TEST(run.epochs[0].batches == 1);
    BOOST_TEST(run.config_json.find("\"batch_ring_bytes\":409600") != std::string::npos,
               run.config_json);
}

BOOST_AUTO_TEST_CASE(a_failing_worker_stops_the_run_with_its_reason) {
    TempDir dir;
    const std::string data = dir.file("data.raw");
    mkdata({"raw", data, "--count", "2000", "--record-size", "4096"});
    // The file shrinks under the running loader: the next pread past the end fails in a worker.
    std::thread shrink([&] {
        std::this_thread::sleep_for(300ms);
        std::filesystem::resize_file(data, 4096 * 100);
    });
    auto result =
        run({cli_path(), "load", data, "--record-size", "4096", "--read", "pread", "--workers", "2",
             "--batch", "4", "--pattern", "sequential", "--step-time", "5ms"});
    shrink.join();
    BOOST_TEST(result.exit_code == 1, "not a runtime failure: " << result.err);
    BOOST_TEST(one_line(result.err));
    BOOST_TEST(result.err.find("worker") != std::string::npos);
    BOOST_TEST(result.err.find("unexpected end of file") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
