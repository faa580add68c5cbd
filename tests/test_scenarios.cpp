// SPDX-License-Identifier: MIT
// The memory scenarios of ../shared/notes/scenarios.md, reproduced with `loaderlens replay` on
// small generated datasets, and checked against what the kernel must report.
#include "loaderlens/loader_run.hpp"
#include "loaderlens/report.hpp"
#include "replay_support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

constexpr std::int64_t kib_per_mib = 1024;

// The figures of the last maps sample at or before `t_ms` (0 when the file was not mapped or
// under the maps tier's threshold then).
std::int64_t rss_at(const std::map<std::int64_t, MappedObject>& series, std::int64_t t_ms) {
    auto it = series.upper_bound(t_ms);
    return it == series.begin() ? 0 : std::prev(it)->second.rss_kb;
}

template <typename Sample>
std::vector<Timed<Sample>> of_process(const std::vector<Timed<Sample>>& all, std::int64_t id) {
    std::vector<Timed<Sample>> out;
    for (const auto& s : all)
        if (s.sample.process_id == id) out.push_back(s);
    return out;
}

const FileSummary* file_summary(const ReportData& report, const std::string& suffix) {
    for (const auto& f : report.files)
        if (f.object.path.ends_with(suffix)) return &f;
    return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(scenarios)

// 1: .npy with mmap, N workers, shuffle: every worker's RSS grows with the file pages it touched,
// Σ RSS counts the shared page cache once per worker, Σ PSS counts it once. The figures the
// kernel must give, from what the loader does: 682 samples of 48 KiB (32 MiB) read once each in
// one epoch by 4 persistent workers (batch k to worker k mod 4), which then hold their mappings
// through a 1 s pause. So at the end Σ PSS of the file = the file (every page was read by some
// worker and is split among those that map it); a worker's RSS of the file is at least the
// distinct bytes it read (the loader's own count) and at most the file; how much more than it
// read the kernel maps (fault-around, large folios) depends on the kernel, but it is what
// pagemap says is present in that worker's mapping, which the residency tier reads separately.
BOOST_AUTO_TEST_CASE(npy_mmap_shuffle_shares_the_page_cache) {
    TempDir dir;
    const std::string data = dir.file("data.npy"), out = dir.file("run.db");
    mkdata({"npy", data, "--count", "682", "--shape", "3x64x64", "--dtype", "f4"}); // 32 MiB
    replay(out, {data, "--workers", "4", "--batch", "8", "--pattern", "shuffle", "--step-time",
                 "30ms", "--persistent", "--epoch-pause", "1000ms", "--interval", "maps=250ms",
                 "residency=250ms", "--cpu-budget", "30%"});
    Recording recording(out);
    const std::int64_t file_kb = static_cast<std::int64_t>(std::filesystem::file_size(data)) / 1024;
    const std::int64_t sample_bytes = 3 * 64 * 64 * 4;
    const std::int64_t object = object_id_of(recording, "/data.npy");
    BOOST_REQUIRE(object > 0);
    const LoaderRun run = recording.loader_run();
    BOOST_REQUIRE_EQUAL(run.epochs.size(), 1u);
    BOOST_REQUIRE(!run.progress.empty());
    const std::int64_t pause_from = run.epochs[0].end_ms + 100,
                       pause_to = run.epochs[0].end_ms + 900;
    // Distinct bytes each worker had read by time t (counted when its batch was done: a floor).
    auto read_by = [&](int worker, std::int64_t t) {
        std::int64_t bytes = 0;
        for (const auto& p : run.progress)
            if (p.t_ms <= t && static_cast<std::size_t>(worker) < p.worker_distinct_bytes.size())
                bytes = p.worker_distinct_bytes[static_cast<std::size_t>(worker)];
        return bytes;
    };
    const auto& last_progress = run.progress.back();
    std::int64_t all_read = 0;
    for (auto bytes : last_progress.worker_distinct_bytes)
        all_read += bytes;
    BOOST_TEST(all_read == 682 * sample_bytes); // every sample once, by one worker

    std::int64_t residency_file = -1;
    for (const auto& f : recording.residency_files())
        if (f.path.ends_with("/data.npy")) residency_file = f.id;
    BOOST_REQUIRE(residency_file > 0);
    const auto mapped = recording.mapped_residency();
    std::int64_t sum_final = 0;
    for (const auto& worker : workers_of(recording)) {
        auto series = file_series(recording, worker.id, object);
        BOOST_REQUIRE_MESSAGE(series.size() >= 3, "too few maps samples of worker " << worker.slot);
        BOOST_TEST_CONTEXT("worker " << worker.slot) {
            for (const auto& [t, figures] : series) { // never less than what it had read
                BOOST_TEST(figures.rss_kb * 1024 >= read_by(worker.slot, t), "at " << t << " ms");
                BOOST_TEST(figures.rss_kb <= file_kb + 4);
            }
            // In the pause, the maps tier (smaps Rss) and the residency tier (pagemap present
            // pages) look at the same settled mapping.
            auto in_pause = series.lower_bound(pause_from);
            BOOST_REQUIRE(in_pause != series.end() && in_pause->first <= pause_to);
            const std::int64_t final_rss = in_pause->second.rss_kb;
            std::int64_t present_kb = -1;
            for (const auto& m : mapped)
                if (m.sample.process_id == worker.id && m.sample.file_id == residency_file &&
                    m.t_ms >= pause_from && m.t_ms <= pause_to)
                    present_kb = m.sample.present_pages * 4;
            const std::int64_t read_kb = read_by(worker.slot, run.epochs[0].end_ms) / 1024;
            BOOST_TEST_MESSAGE("worker " << worker.slot << ": read " << read_kb
                                         << " KiB, data.npy RSS " << series.begin()->second.rss_kb
                                         << " -> " << final_rss << " KiB, pagemap present "
                                         << present_kb << " KiB");
            BOOST_TEST(present_kb == final_rss);
            BOOST_TEST(final_rss >= read_kb); // ~8.3 MiB: 21 or 22 batches of 8 x 48 KiB
            BOOST_TEST(read_kb >= 21 * 8 * 48);
            sum_final += final_rss;
            // The growth is file pages (RssFile), not anonymous memory: nothing leaks.
            const auto fast = of_process(recording.fast(), worker.id);
            BOOST_REQUIRE(!fast.empty());
            BOOST_TEST(*fast.back().sample.rss_file >= final_rss);
            BOOST_TEST(*fast.back().sample.rss_anon < 4 * kib_per_mib);
        }
    }
    const ReportData report = build_report(recording);
    const FileSummary* file = file_summary(report, "/data.npy");
    BOOST_REQUIRE(file);
    BOOST_TEST_MESSAGE("file " << file_kb << " KiB, peak Σ RSS " << *file->total_rss.value
                               << " KiB (workers' final RSS " << sum_final << "), peak Σ PSS "
                               << *file->total_pss.value << " KiB");
    // Workers only gain pages: the peak of Σ RSS is the sum at the end, within one maps run.
    BOOST_TEST(std::abs(*file->total_rss.value - sum_final) <= sum_final / 100);
    BOOST_TEST(*file->total_rss.value <= 4 * file_kb);
    // Σ PSS: the file once (each page split among the workers that map it), to within 1%, once
    // the workers are settled (in the pause). The peak may stand a little above: the maps tier
    // reads the processes one after another, and while workers fault pages in (a marker's sample
    // at the epoch's start lands there) a page read as shared by k in one process and by k + 1
    // in the next counts more than once (measured once: +2.5%).
    std::map<std::int64_t, std::int64_t> pss_by_tick;
    for (const auto& row : recording.maps())
        if (row.object_id == object) pss_by_tick[row.t_ms] += row.figures.pss_kb;
    const auto settled = pss_by_tick.lower_bound(pause_from);
    BOOST_REQUIRE(settled != pss_by_tick.end() && settled->first <= pause_to);
    BOOST_TEST(std::abs(settled->second - file_kb) <= file_kb / 100);
    BOOST_TEST(*file->total_pss.value <= file_kb + file_kb * 4 / 100);
}

// 4 and 5: LMDB. Persistent workers keep the pages of data.mdb they touched: each epoch adds
// the records it visited. Re-forked workers start low every generation.
BOOST_AUTO_TEST_CASE(lmdb_persistent_workers_grow_each_epoch_reforked_ones_start_low) {
    TempDir dir;
    const std::string db = dir.file("data.lmdb");
    // A fault maps more than the record read: fault-around (64 KiB), and since Linux 6.18 the
    // whole large folio of the page cache (measured here: 10 random 128 KiB reads mapped
    // 14.7 MiB). So each worker reads few records per epoch (16 random of 800, 100 MiB), and a
    // new epoch's records add pages the worker did not map yet.
    mkdata({"lmdb", db, "--count", "800", "--value-size", "128KiB"});
    // Batches of one, one in flight per worker: a new worker starts with almost nothing mapped.
    // clang-format off
    const std::vector<std::string> common{
        db, "--workers", "4", "--batch", "1", "--prefetch", "1", "--epochs", "3",
        "--pattern", "random", "--num-samples", "64", "--step-time", "30ms",
        "--epoch-pause", "700ms", "--interval", "maps=200ms", "--cpu-budget", "30%"};
    // clang-format on
    auto args = common;
    args.push_back("--persistent");
    const std::string persistent_out = dir.file("persistent.db");
    replay(persistent_out, args);
    {
        Recording recording(persistent_out);
        const std::int64_t object = object_id_of(recording, "/data.mdb");
        BOOST_REQUIRE(object > 0);
        const auto workers = workers_of(recording);
        BOOST_REQUIRE_EQUAL(workers.size(), 4u);
        const std::int64_t end_1 = marker_time(recording, "epoch 1 start") - 1;
        const std::int64_t end_2 = marker_time(recording, "epoch 2 start") - 1;
        for (const auto& worker : workers) {
            auto series = file_series(recording, worker.id, object);
            const std::int64_t after_1 = rss_at(series, end_1), after_2 = rss_at(series, end_2);
            const std::int64_t after_3 = series.empty() ? 0 : series.rbegin()->second.rss_kb;
            BOOST_TEST_MESSAGE("persistent worker " << worker.slot << ": data.mdb RSS after epochs "
                                                    << after_1 << ", " << after_2 << ", " << after_3
                                                    << " KiB");
            BOOST_TEST(after_2 > after_1 * 11 / 10);
            BOOST_TEST(after_3 > after_2);
            // File-backed and shared: PSS well under RSS (4 workers share the cached pages).
            BOOST_TEST(series.rbegin()->second.pss_kb < after_3);
        }
    }
    const std::string reforked_out = dir.file("reforked.db");
    replay(reforked_out, common);
    Recording recording(reforked_out);
    const std::int64_t object = object_id_of(recording, "/data.mdb");
    const auto workers = workers_of(recording); // by generation, then slot
    BOOST_REQUIRE_EQUAL(workers.size(), 12u);
    for (std::size_t i = 4; i < workers.size(); ++i) {
        const auto previous = file_series(recording, workers[i - 4].id, object);
        const auto current = file_series(recording, workers[i].id, object);
        BOOST_REQUIRE(!previous.empty());
        const std::int64_t previous_last = previous.rbegin()->second.rss_kb;
        // Its first maps sample (any object: the worker may not have mapped data.mdb yet).
        std::int64_t first_t = -1;
        for (const auto& row : recording.maps())
            if (row.process_id == workers[i].id && (first_t < 0 || row.t_ms < first_t))
                first_t = row.t_ms;
        BOOST_REQUIRE(first_t >= 0);
        const std::int64_t first = rss_at(current, first_t);
        BOOST_TEST_MESSAGE("slot " << workers[i].slot << " gen " << workers[i].generation
                                   << ": starts at " << first << " KiB, the previous generation"
                                   << " ended at " << previous_last << " KiB");
        BOOST_TEST(first < previous_last / 2);
    }
}

// The fix for 4: persistent workers that reopen the environment each epoch drop what they had
// mapped, so each epoch starts low again.
BOOST_AUTO_TEST_CASE(lmdb_reopen_each_epoch_resets_persistent_workers) {
    TempDir dir;
    const std::string db = dir.file("data.lmdb"), out = dir.file("run.db");
    mkdata({"lmdb", db, "--count", "800", "--value-size", "128KiB"});
    // clang-format off
    replay(out, {db, "--workers", "4", "--batch", "1", "--prefetch", "1", "--epochs", "3",
                 "--pattern", "random", "--num-samples", "64", "--step-time", "30ms",
                 "--epoch-pause", "700ms", "--interval", "maps=200ms", "--cpu-budget", "30%",
                 "--persistent", "--reopen-each-epoch"});
    // clang-format on
    Recording recording(out);
    std::int64_t residency_file = -1;
    for (const auto& f : recording.residency_files())
        if (f.path.ends_with("/data.mdb")) residency_file = f.id;
    BOOST_REQUIRE(residency_file > 0);
    const auto mapped = recording.mapped_residency();
    const std::int64_t page_kb = ::sysconf(_SC_PAGESIZE) / 1024;
    const auto workers = workers_of(recording);
    BOOST_REQUIRE_EQUAL(workers.size(), 4u);
    for (int epoch = 1; epoch <= 2; ++epoch) {
        // "Early": the sample the loader asks for once every worker has said it reopened the
        // environment, before the epoch's first batch. Not the start marker's own sample: as
        // with PyTorch, the workers hear of the epoch after the start marker, and that sample
        // raced with their reopening (one of 8 read a worker still at its full 27 MiB).
        const std::int64_t start =
            marker_time(recording, "workers ready for epoch " + std::to_string(epoch));
        // "Before": the sample the previous epoch's end marker asked for.
        const std::int64_t previous_end =
            marker_time(recording, "epoch " + std::to_string(epoch - 1) + " end");
        for (const auto& worker : workers) {
            // The data file's per-file figures at a marker come from the residency tier
            // (pagemap), which every marker's sample runs (this one's waits for the 250 ms gap
            // after the start marker's: 247-262 ms here); the maps tier (smaps) is in it only
            // when its own account is not in debt (docs/recording.md, Markers), and at
            // --interval maps=200ms it never is here: its next row came 363-875 ms after the
            // marker, the workers reading again meanwhile (failed in a local CI run, 2026-11-29).
            const auto first_at_or_after = [&](std::int64_t t) -> const Timed<MappedResidency>* {
                const Timed<MappedResidency>* found = nullptr;
                for (const auto& m : mapped)
                    if (m.sample.process_id == worker.id && m.sample.file_id == residency_file &&
                        m.t_ms >= t && (!found || m.t_ms < found->t_ms))
                        found = &m;
                return found;
            };
            const auto* at_end = first_at_or_after(previous_end);
            BOOST_REQUIRE(at_end != nullptr);
            BOOST_REQUIRE(at_end->t_ms < start);
            const std::int64_t before = at_end->sample.present_pages * page_kb;
            const auto* after = first_at_or_after(start);
            BOOST_REQUIRE(after != nullptr);
            const std::int64_t early = after->sample.present_pages * page_kb;
            BOOST_TEST_MESSAGE("worker " << worker.slot << " epoch " << epoch << ": " << before
                                         << " KiB before, " << early << " KiB at "
                                         << after->t_ms - start << " ms");
            BOOST_TEST(before > 0);
            BOOST_TEST(early < before / 2);
        }
    }
}

// 7: copy-on-read. main builds a 64 MiB heap of small objects; workers visiting the objects
// write their reference counts, so every page they touch becomes a private copy: Private_Dirty
// climbs while RSS stays flat (the pages were already counted, shared, from birth).
BOOST_AUTO_TEST_CASE(cow_heap_turns_shared_pages_private_without_moving_rss) {
    TempDir dir;
    const std::string data = dir.file("data.raw"), out = dir.file("run.db");
    mkdata({"raw", data, "--count", "16384", "--record-size", "1024"});
    // pread: no file pages in RSS. About 100 samples/s per worker, one batch of 5 prefetched:
    // the first rollup samples see a few percent of the heap copied, the last ones nearly all.
    replay(out, {data,
                 "--record-size",
                 "1024",
                 "--read",
                 "pread",
                 "--cow-heap",
                 "64",
                 "--workers",
                 "2",
                 "--batch",
                 "5",
                 "--prefetch",
                 "1",
                 "--step-time",
                 "25ms",
                 "--pattern",
                 "random",
                 "--num-samples",
                 "1600",
                 "--interval",
                 "rollup=100ms",
                 "--cpu-budget",
                 "50%"});
    Recording recording(out);
    const auto rollup = recording.rollup();
    for (const auto& worker : workers_of(recording)) {
        auto samples = of_process(rollup, worker.id);
        BOOST_REQUIRE(samples.size() >= 5);
        const auto& first = samples.front().sample;
        const auto& last = samples.back().sample;
        const std::int64_t dirty_growth = *last.private_dirty - *first.private_dirty;
        BOOST_TEST_MESSAGE("worker " << worker.slot << ": Private_Dirty " << *first.private_dirty
                                     << " -> " << *last.private_dirty << " KiB, RSS " << *first.rss
                                     << " -> " << *last.rss << " KiB");
        BOOST_TEST(dirty_growth >= 50 * kib_per_mib);
        BOOST_TEST(std::abs(*last.rss - *first.rss) <= *first.rss / 10);
        BOOST_TEST(*first.rss >= 64 * kib_per_mib); // the heap is in RSS from birth
    }
}

// 8: shared-memory batches in flight: W x prefetch x batch bytes, in main and in /dev/shm.
BOOST_AUTO_TEST_CASE(shared_memory_batches_scale_with_workers_and_prefetch) {
    TempDir dir;
    const std::string data = dir.file("data.npy");
    mkdata({"npy", data, "--count", "1024", "--shape", "4096", "--dtype", "f4"}); // 16 KiB each
    const std::int64_t batch_kb = 16 * 16;
    for (auto [workers, prefetch] : {std::pair{2, 2}, std::pair{4, 3}}) {
        const std::string out = dir.file("run" + std::to_string(workers) + ".db");
        replay(out, {data, "--workers", std::to_string(workers), "--prefetch",
                     std::to_string(prefetch), "--batch", "16", "--step-time", "30ms"});
        Recording recording(out);
        const std::int64_t ring_kb = workers * prefetch * batch_kb;
        const auto main = main_of(recording);
        std::int64_t main_shmem = 0;
        for (const auto& s : of_process(recording.fast(), main.id))
            main_shmem = std::max(main_shmem, s.sample.rss_shmem.value_or(0));
        BOOST_TEST_MESSAGE(workers << " workers x prefetch " << prefetch << ": main RssShmem "
                                   << main_shmem << " KiB, batches in flight " << ring_kb
                                   << " KiB");
        BOOST_TEST(main_shmem >= ring_kb);
        BOOST_TEST(main_shmem <= ring_kb + 1024);
        for (const auto& worker : workers_of(recording)) {
            std::int64_t shmem = 0;
            for (const auto& s : of_process(recording.fast(), worker.id))
                shmem = std::max(shmem, s.sample.rss_shmem.value_or(0));
            BOOST_TEST(shmem >= prefetch * batch_kb); // the buffers it filled
            BOOST_TEST(shmem <= prefetch * batch_kb + 512);
        }
        std::int64_t devshm = 0;
        for (const auto& s : recording.system())
            devshm = std::max(devshm, s.sample.devshm_used.value_or(0));
        BOOST_TEST(devshm >= ring_kb);
    }
}

// 9: pin_memory: main copies each batch into locked staging; Locked and RssShmem of main grow
// by the staging size.
BOOST_AUTO_TEST_CASE(pinned_staging_is_locked_in_main) {
    TempDir dir;
    const std::string data = dir.file("data.npy"), out = dir.file("run.db");
    mkdata({"npy", data, "--count", "1024", "--shape", "4096", "--dtype", "f4"});
    replay(out, {data, "--workers", "2", "--prefetch", "2", "--batch", "16", "--pin", "--step-time",
                 "30ms", "--interval", "rollup=200ms"});
    Recording recording(out);
    const std::int64_t staging_kb = 2 * 2 * 16 * 16, ring_kb = staging_kb;
    const auto main = main_of(recording);
    std::int64_t locked = 0, shmem = 0;
    for (const auto& s : of_process(recording.rollup(), main.id))
        locked = std::max(locked, s.sample.locked.value_or(0));
    for (const auto& s : of_process(recording.fast(), main.id))
        shmem = std::max(shmem, s.sample.rss_shmem.value_or(0));
    BOOST_TEST_MESSAGE("main: Locked " << locked << " KiB, RssShmem " << shmem << " KiB; staging "
                                       << staging_kb << " KiB");
    BOOST_TEST(locked >= staging_kb);
    BOOST_TEST(locked <= staging_kb + 256);
    BOOST_TEST(shmem >= ring_kb + staging_kb);
    BOOST_TEST(recording.meta("loader.config").find("\"pin\":true") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
