// SPDX-License-Identifier: MIT
// The memory signature of HDF5 reads (docs/hdf5.md), from the kernel: the chunk cache is each
// worker's anonymous memory, about its setting (smaps_rollup against --chunk-cache 0); a file
// opened before fork is one open file description (one flock in /proc/locks) where workers that
// open their own hold one each; and the findings of scenarios 13 and 14 in a replay's report,
// each with a control where it must not appear.
#include "finding_support.hpp"
#include "hdf5_support.hpp"
#include "loaderlens/report.hpp"
#include "residency_support.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <sstream>
#include <sys/stat.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// 32 MiB of 64 KiB records in chunks of 4 (256 KiB): a worker reading half the records in a
// shuffled epoch touches most chunks, more than a 16 MiB cache holds.
std::string make_chunked(const TempDir& dir) {
    const std::string path = dir.file("chunked.h5");
    mkdata({"hdf5", path, "--count", "512", "--shape", "64x1024", "--dtype", "u1", "--chunks",
            "4x64x1024"});
    return path;
}

struct Held {
    std::vector<std::int64_t> worker_anon_kb;
    int flocks = 0; // on the dataset's inode, while the workers hold it open
};

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Runs the loader with 2 persistent workers and reads the kernel's figures in the pause after
// epoch 0, while the workers live with their chunk caches.
Held held_after_an_epoch(const TempDir& dir, const std::string& data, const std::string& open,
                         const std::string& cache) {
    const std::string markers = dir.file("markers-" + open + cache);
    const std::string events = dir.file("events-" + open + cache);
    Child loader({"/usr/bin/env",
                  "LOADERLENS_MARKERS=" + markers,
                  "LOADERLENS_LOADER_EVENTS=" + events,
                  cli_path(),
                  "load",
                  "-q",
                  "--workers",
                  "2",
                  "--persistent",
                  "--epochs",
                  "2",
                  "--epoch-pause",
                  "1500ms",
                  "--batch",
                  "8",
                  "--hdf5-open",
                  open,
                  "--chunk-cache",
                  cache,
                  "--",
                  data});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (read_text(markers).find("epoch 0 end") == std::string::npos) {
        BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "no epoch 0 end");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Held held;
    std::istringstream lines(read_text(events));
    for (std::string line; std::getline(lines, line);) {
        const auto event = nlohmann::json::parse(line);
        if (event["event"] == "worker")
            held.worker_anon_kb.push_back(anonymous_kb(event["pid"].get<pid_t>()));
    }
    struct stat st {};
    BOOST_REQUIRE(::stat(data.c_str(), &st) == 0);
    const std::string inode = ":" + std::to_string(st.st_ino) + " ";
    std::istringstream locks(read_text("/proc/locks"));
    for (std::string line; std::getline(locks, line);)
        if (line.find("FLOCK") != std::string::npos && line.find(inode) != std::string::npos)
            ++held.flocks;
    const auto status = loader.wait(std::chrono::seconds(30));
    BOOST_REQUIRE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    BOOST_REQUIRE_EQUAL(held.worker_anon_kb.size(), 2u);
    return held;
}

ReportData replayed(const TempDir& dir, const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), {"--workers", "2", "--batch", "8", "--step-time", "5ms"});
    replay(dir.file(name), args);
    Recording recording(dir.file(name));
    return build_report(recording);
}

} // namespace

BOOST_AUTO_TEST_SUITE(hdf5_memory)

// Scenario 14's anonymous side and scenario 13's file state, from the kernel.
BOOST_AUTO_TEST_CASE(chunk_cache_is_worker_anon_and_parent_open_is_one_description) {
    TempDir dir;
    const std::string data = make_chunked(dir);
    constexpr std::int64_t cache_kb = 16 * 1024;
    for (const std::string open : {"worker", "parent"}) {
        const Held without = held_after_an_epoch(dir, data, open, "0");
        const Held with = held_after_an_epoch(dir, data, open, "16MiB");
        for (std::size_t w = 0; w < 2; ++w) {
            const std::int64_t growth = with.worker_anon_kb[w] - without.worker_anon_kb[w];
            BOOST_TEST_MESSAGE(open << " worker " << w << ": Anonymous "
                                    << without.worker_anon_kb[w] << " KiB without a chunk cache, "
                                    << with.worker_anon_kb[w] << " KiB with 16 MiB: +" << growth
                                    << " KiB");
            BOOST_TEST(std::abs(growth - cache_kb) <= cache_kb / 5,
                       open << " worker " << w << ": +" << growth << " KiB for a 16 MiB cache");
        }
        // HDF5 1.10 takes a shared flock when it opens a file: one per open file description.
        BOOST_TEST(with.flocks == (open == "parent" ? 1 : 2), open << ": " << with.flocks);
        BOOST_TEST(without.flocks == (open == "parent" ? 1 : 2), open << ": " << without.flocks);
    }
}

// Scenario 13 (opened before fork), the per-worker chunk cache (and chunks it cannot hold) and
// scenario 14 (the dataset in
// the page cache, in no worker) in a replay's report; controls: opened in the workers with the
// default cache; a mapped .npy (pages in the workers); and a raw file read with pread, where 14
// applies as to HDF5.
BOOST_AUTO_TEST_CASE(findings_in_replays_and_controls) {
    TempDir dir;
    const std::string data = make_chunked(dir);
    const ReportData parent =
        replayed(dir, "parent.db", {"--hdf5-open", "parent", "--chunk-cache", "16MiB", "--", data});
    BOOST_TEST(of_kind(parent, "hdf5_opened_before_fork").size() == 1u, kinds(parent));
    const auto cache = of_kind(parent, "hdf5_chunk_cache");
    BOOST_REQUIRE_MESSAGE(cache.size() == 1u, kinds(parent));
    BOOST_TEST(cache[0]->figure == 2.0 * 16 * 1024); // 2 workers x 16 MiB, from the config
    const auto outside = of_kind(parent, "page_cache_outside_workers");
    BOOST_REQUIRE_MESSAGE(outside.size() == 1u, kinds(parent));
    // The test's own mincore(2) of the file after the replay.
    const double cached_kb =
        static_cast<double>(residency::cached_pages(data) * residency::page_size() / 1024);
    BOOST_TEST(std::abs(outside[0]->figure - cached_kb) <= 0.05 * cached_kb,
               outside[0]->figure << " KiB vs mincore " << cached_kb << " KiB");
    BOOST_TEST(outside[0]->file == data);

    const ReportData worker = replayed(dir, "worker.db", {"--", data});
    BOOST_TEST(of_kind(worker, "hdf5_opened_before_fork").empty(), kinds(worker));
    BOOST_TEST(of_kind(worker, "hdf5_chunk_cache").empty(), kinds(worker)); // 2 x 1 MiB
    BOOST_TEST(of_kind(worker, "page_cache_outside_workers").size() == 1u, kinds(worker));
    // A cache smaller than one chunk (256 KiB) caches nothing: said, whatever the total.
    const ReportData tiny = replayed(dir, "tiny.db", {"--chunk-cache", "128KiB", "--", data});
    const auto uncached = of_kind(tiny, "hdf5_chunk_cache");
    BOOST_REQUIRE_MESSAGE(uncached.size() == 1u, kinds(tiny));
    BOOST_TEST(uncached[0]->title.find("do not fit") != std::string::npos, uncached[0]->title);

    const std::string npy = dir.file("twin.npy");
    mkdata({"npy", npy, "--count", "512", "--shape", "64x1024", "--dtype", "u1"});
    const ReportData mapped = replayed(dir, "mapped.db", {"--", npy});
    BOOST_TEST(of_kind(mapped, "page_cache_outside_workers").empty(), kinds(mapped));
    const ReportData pread = replayed(dir, "pread.db", {"--read", "pread", "--", npy});
    BOOST_TEST(of_kind(pread, "page_cache_outside_workers").size() == 1u, kinds(pread));
    BOOST_TEST(of_kind(pread, "hdf5_opened_before_fork").empty(), kinds(pread));
}

BOOST_AUTO_TEST_SUITE_END()
