// SPDX-License-Identifier: MIT
// The end-to-end check: a replay of a shuffled mmap .npy with 4 workers over a cold file
// shows, in the recording, the report and the export, the page cache filling ahead of the reads,
// each worker's mapped share growing, and the amplification figures; pread with POSIX_FADV_RANDOM
// is the contrast (no readahead: the cache holds what was read). Each runs twice: on this kernel,
// and as on Debian 12's Linux 6.1 (a seccomp filter answers cachestat(2) with ENOSYS and the
// PAGEMAP_SCAN ioctl with ENOTTY, what that kernel gives), so the fallbacks the product ships
// (mincore, 8-byte pagemap entries) are checked end to end on every kernel.
#include "consumers_agree.hpp"
#include "loaderlens/export.hpp"
#include "loaderlens/report.hpp"
#include "replay_support.hpp"
#include "residency_support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;

namespace {

const FileResidencySummary& dataset_summary(const ReportData& report, const std::string& path) {
    for (const auto& s : report.residency)
        if (s.file.path == path) return s;
    BOOST_FAIL("the dataset " + path + " is not in the report's residency section");
    return report.residency.front();
}

// 4096 records of 8 KiB: 32 MiB of data.
std::string make_dataset(const TempDir& dir) {
    const std::string data = dir.file("images.npy");
    mkdata({"npy", data, "--count", "4096", "--shape", "2048", "--dtype", "f4"});
    make_cold(data);
    return std::filesystem::canonical(data).string();
}

// How the recorder reads the kernel: natively, or as on Linux 6.1.
struct Kernel {
    bool as_6_1;
    const char* name() const { return as_6_1 ? "as on Linux 6.1" : "this kernel"; }
    std::string cache_method() const {
        return to_string(as_6_1 ? CacheMethod::mincore
                                : expected_cache_method(CacheMethod::cachestat));
    }
    std::string pagemap_method() const {
        return as_6_1 ? "pagemap" : expected_pagemap_method(true);
    }
};
const Kernel kernels[] = {{false}, {true}};

// `loaderlens replay -q -o DB ARGS...`, under the kernel's refusals; requires success.
void replay_on(const Kernel& kernel, const TempDir& dir, const std::string& db,
               const std::vector<std::string>& args) {
    if (!kernel.as_6_1) {
        replay(db, args);
        return;
    }
    std::vector<std::string> argv{cli_path(), "replay", "-q", "-o", db};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string output = dir.file("replay.out");
    const int code = run_with_refusals(argv, ENOSYS, ENOTTY, output);
    std::ifstream in(output);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    BOOST_REQUIRE_MESSAGE(code == 0, "replay failed (" << code << "): " << text);
}

void check_mmap_shuffle(const Kernel& kernel) {
    TempDir dir;
    const std::string data = make_dataset(dir);
    const std::string db = dir.file("run.db");
    // 256 batches at 15 ms each over 4 workers: about 4 s, sampled every 250 ms.
    replay_on(kernel, dir, db,
              {data, "--workers", "4", "--batch", "16", "--pattern", "shuffle", "--step-time",
               "15ms", "--interval", "residency=250ms"});
    check_consumers_agree(db);
    Recording recording(db);

    const auto files = recording.residency_files();
    auto file = std::find_if(files.begin(), files.end(), [&](auto& f) { return f.path == data; });
    BOOST_REQUIRE(file != files.end());
    BOOST_TEST(to_string(file->method) == kernel.cache_method());
    BOOST_TEST(recording.meta("residency_pagemap_method") == kernel.pagemap_method());
    BOOST_TEST(file->layout.count == 249); // 8193 pages (header page included) / 256 -> 33 each

    // Bucket sums are the totals, in every stored row.
    const auto cache = recording.cache_residency();
    const auto mapped = recording.mapped_residency();
    BOOST_TEST(cache.size() >= 8u);
    for (const auto& [t, c] : cache) {
        BOOST_TEST(sum(c.buckets) == c.totals.cached);
        if (c.totals.evicted) // cachestat; mincore knows only what is cached
            BOOST_TEST(sum(c.evicted_buckets) == *c.totals.evicted);
        else
            BOOST_TEST(c.evicted_buckets.empty());
    }
    for (const auto& [t, m] : mapped)
        BOOST_TEST(sum(m.buckets) == m.present_pages);

    const ReportData report = build_report(recording);
    const FileResidencySummary& s = dataset_summary(report, data);
    BOOST_TEST_MESSAGE("cached before " << s.cached_before.value_or(-1) << " pages, first "
                                        << s.first_cached.value_or(-1) << ", final "
                                        << s.final_cached.value_or(-1) << " of "
                                        << file->layout.file_pages);
    // The file was cold, and everything was read once by the end.
    BOOST_TEST(s.cached_before.value_or(-1) * 100 <= file->layout.file_pages);
    BOOST_TEST(*s.final_cached * 100 >= file->layout.file_pages * 99);
    BOOST_TEST(s.time_to_90_ms.has_value());

    // Cache ahead of the reads: readahead brings in more than the loader has read.
    BOOST_REQUIRE(s.headline.has_value());
    const ResidencyCheckpoint& h = *s.headline;
    BOOST_TEST_MESSAGE("at " << h.t_ms << " ms: read " << h.read_fraction << ", cached "
                             << h.cached_fraction << ", cache x"
                             << h.cache_amplification.value_or(-1) << ", worker mapped "
                             << h.worker_mapped_fraction.value_or(-1) << " x"
                             << h.worker_mapped_amplification.value_or(-1));
    BOOST_TEST(h.read_fraction < 0.9);
    BOOST_TEST(h.cached_fraction > h.read_fraction);
    BOOST_TEST(h.cache_amplification.value_or(0) > 1.5);
    // Each worker maps more than it read: fault-around and large folios.
    BOOST_TEST(h.worker_mapped_amplification.value_or(0) > 1.5);
    for (const auto& c : s.checkpoints)
        BOOST_TEST(c.cached_fraction + 0.01 >= c.read_fraction);

    // Each worker's mapped share grows: never down while it maps the file, and up overall. An
    // exiting worker's mappings go before the tracker sees it gone: that sample is the row of
    // zeros the sampler writes at an unmap (mapped_pages 0), not a shrinking share.
    const auto workers = workers_of(recording);
    BOOST_REQUIRE_EQUAL(workers.size(), 4u);
    for (const auto& w : workers) {
        std::vector<std::int64_t> present;
        for (const auto& [t, m] : mapped)
            if (m.process_id == w.id && m.file_id == file->id && m.mapped_pages > 0 &&
                (!w.exit_ms || t < *w.exit_ms))
                present.push_back(m.present_pages);
        BOOST_REQUIRE_MESSAGE(present.size() >= 4u,
                              "worker " << w.slot << ": " << present.size() << " samples");
        BOOST_TEST(present.back() > present.front() + file->layout.file_pages / 10,
                   "worker " << w.slot << ": " << present.front() << " -> " << present.back());
        for (std::size_t i = 1; i < present.size(); ++i)
            BOOST_TEST(present[i] >= present[i - 1], "worker " << w.slot << " sample " << i);
    }

    // The report and both exports carry it.
    const std::string text = render_report_text(report);
    BOOST_TEST(text.find("loader reads vs residency") != std::string::npos);
    BOOST_TEST(text.find("amplification at") != std::string::npos);
    std::ostringstream json_out, csv_out;
    export_json(recording, json_out);
    const auto j = nlohmann::json::parse(json_out.str());
    BOOST_TEST(j["residency"]["cache"].size() == cache.size());
    BOOST_TEST(j["residency"]["cache"][0]["buckets"].size() ==
               static_cast<std::size_t>(file->layout.count));
    BOOST_TEST(j["residency"]["mapped"].size() == mapped.size());
    export_residency_csv(recording, csv_out);
    std::size_t expected_rows = 1; // header
    for (const auto& [t, c] : cache)
        expected_rows += c.buckets.size() + c.evicted_buckets.size();
    for (const auto& [t, m] : mapped)
        expected_rows += m.buckets.size();
    const std::string csv = csv_out.str();
    BOOST_TEST(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == expected_rows);
}

} // namespace

BOOST_AUTO_TEST_SUITE(residency_replay)

BOOST_AUTO_TEST_CASE(mmap_shuffle_cache_runs_ahead_of_reads_and_worker_mappings_grow) {
    for (const Kernel& kernel : kernels) {
        BOOST_TEST_CONTEXT(kernel.name()) {
            check_mmap_shuffle(kernel);
        }
    }
}

BOOST_AUTO_TEST_CASE(pread_with_random_advice_caches_what_was_read) {
    for (const Kernel& kernel : kernels) {
        BOOST_TEST_CONTEXT(kernel.name()) {
            TempDir dir;
            const std::string data = make_dataset(dir);
            const std::string db = dir.file("run.db");
            replay_on(kernel, dir, db,
                      {data, "--workers", "2", "--batch", "16", "--pattern", "shuffle", "--subset",
                       "0.25", "--read", "pread", "--advice", "random", "--interval",
                       "residency=100ms"});
            check_consumers_agree(db);
            Recording recording(db);
            const ReportData report = build_report(recording);
            const FileResidencySummary& s = dataset_summary(report, data);
            BOOST_TEST(to_string(s.file.method) == kernel.cache_method());
            // Nothing maps the file, yet it is followed (replay asks for its dataset).
            BOOST_TEST(s.file.requested);
            for (const auto& p : s.processes)
                BOOST_TEST(p.present.value.value_or(0) == 0);
            // A quarter of the records, read with no readahead: the cache holds the pages of the
            // records read and no more. A record of 8 KiB after the 128-byte header straddles 3
            // pages, so the pages cached are between 1x and 1.5x the bytes read (+ the header
            // page).
            BOOST_REQUIRE(!recording.loader_run().progress.empty());
            const std::int64_t read = recording.loader_run().progress.back().distinct_bytes;
            const std::int64_t cached = s.final_cached.value_or(0) * s.file.page_size;
            BOOST_TEST_MESSAGE(kernel.name()
                               << ", pread+random: read " << read << " bytes, cached " << cached);
            BOOST_TEST(read * 4 == 4096 * 8192); // --subset 0.25 of 4096 records of 8 KiB
            BOOST_TEST(cached >= read);
            BOOST_TEST(cached <= read * 3 / 2 + s.file.page_size);
        }
    }
}

BOOST_AUTO_TEST_CASE(cachestat_refused_by_seccomp_falls_back_to_mincore) {
    TempDir dir;
    const std::string file = dir.file("data.bin");
    const std::int64_t pages = 2048;
    make_file(file, static_cast<std::size_t>(pages * 4096));
    make_cold(file);
    { // half of it cached: the first 1024 pages, without readahead
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        std::vector<char> buffer(1024 * 4096);
        BOOST_REQUIRE(::pread(fd, buffer.data(), buffer.size(), 0) ==
                      static_cast<ssize_t>(buffer.size()));
        ::close(fd);
    }
    BOOST_REQUIRE_EQUAL(cached_pages(file), pages / 2);
    const std::string db = dir.file("run.db");
    // EPERM, as container runtimes refuse syscalls newer than their profile.
    const int code = run_with_refusals({cli_path(), "record", "-q", "-o", db, "--file", file,
                                        "--interval", "residency=100ms", "--", "/bin/sleep", "0.3"},
                                       EPERM, 0, dir.file("record.out"));
    BOOST_REQUIRE_EQUAL(code, 0);
    check_consumers_agree(db);
    Recording recording(db);
    const auto files = recording.residency_files();
    BOOST_REQUIRE_EQUAL(files.size(), 1u);
    BOOST_TEST(to_string(files[0].method) == "mincore");
    const auto cache = recording.cache_residency();
    BOOST_REQUIRE(!cache.empty());
    // The machine's DAMON scheme evicts idle page cache after ~30 s: far beyond this test.
    BOOST_TEST(cache.front().sample.totals.cached == pages / 2);
    BOOST_TEST(!cache.front().sample.totals.evicted.has_value()); // mincore: n/a, not 0
}

BOOST_AUTO_TEST_SUITE_END()
