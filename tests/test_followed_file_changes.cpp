// SPDX-License-Identifier: MIT
// A followed file that changes while recorded (issue 26, "followed files stay right"): one that
// grows is read at its new size (size, buckets, page cache, present pages clipped to it), and a
// path that names another file is another object. The oracles: the child's own /proc/PID/smaps
// (Rss, Pss of the file's mappings), mincore(2) on a mapping of the test's own, stat(2).
#include "loaderlens/recording.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/residency_generations.hpp"
#include "paused_sample.hpp"
#include "precondition.hpp"
#include "residency_children.hpp"
#include "smaps_oracle.hpp"

#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;

namespace {

std::uint64_t inode_of(const std::string& path) {
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_ino;
}

std::int64_t size_of(const std::string& path) {
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_size;
}

// Appends non-zero bytes until the file holds `bytes`.
void grow_to(const std::string& path, std::int64_t bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
    BOOST_REQUIRE(fd >= 0);
    const std::string chunk(1 << 20, '\x5a');
    std::int64_t size = size_of(path);
    while (size < bytes) {
        const auto n = static_cast<std::size_t>(std::min<std::int64_t>(chunk.size(), bytes - size));
        BOOST_REQUIRE(::write(fd, chunk.data(), n) == static_cast<ssize_t>(n));
        size += static_cast<std::int64_t>(n);
    }
    ::close(fd);
}

const ResidencyFile* file_with_id(const std::vector<ResidencyFile>& files, std::int64_t id) {
    for (const auto& f : files)
        if (f.id == id) return &f;
    return nullptr;
}

} // namespace

BOOST_AUTO_TEST_SUITE(followed_file_changes)

// The child maps 64 MiB of a 2 MiB file (as LMDB maps its map size), then the file grows to
// 24 MiB under the mapping and the child reads all of it.
BOOST_AUTO_TEST_CASE(a_file_grown_while_mapped_is_read_at_its_new_size) {
    constexpr std::int64_t small = 2 << 20, large = 24 << 20, reserved = 64 << 20;
    for (const Methods& methods : all_methods()) {
        BOOST_TEST_CONTEXT(methods.name()) {
            TempDir dir;
            const std::string path = dir.file("data.mdb");
            make_file(path, small);
            Forked child([&](Forked& self) {
                const int fd = ::open(path.c_str(), O_RDONLY);
                auto* base = static_cast<volatile char*>(
                    ::mmap(nullptr, reserved, PROT_READ, MAP_SHARED, fd, 0));
                std::int64_t sum = 0;
                for (;;) {
                    const std::string line = self.receive(60s);
                    if (line.empty()) ::_exit(0);
                    struct stat st {};
                    ::fstat(fd, &st);
                    for (std::int64_t at = 0; at < st.st_size; at += 4096)
                        sum += base[at];
                    self.send("read " + std::to_string(sum != 0));
                }
            });
            const std::vector<ProcessInfo> live{process(1, child.pid())};
            ResidencySampler sampler(methods.options());
            Problems problems;
            child.send("read");
            BOOST_REQUIRE(child.receive() == "read 1");
            ResidencySample first;
            sampler.sample(live, first, problems);
            BOOST_REQUIRE_EQUAL(first.new_files.size(), 1u);
            const ResidencyFile before = first.new_files.front();
            BOOST_TEST(before.size_bytes == small);

            grow_to(path, large);
            child.send("read");
            BOOST_REQUIRE(child.receive() == "read 1");
            const auto oracle = smaps_of_file(child.pid(), inode_of(path));
            const std::int64_t cached = cached_pages(path);
            ResidencySample second;
            sampler.sample(live, second, problems);

            // A new generation: the same file (path, device, inode), its new size and layout.
            BOOST_REQUIRE_EQUAL(second.new_files.size(), 1u);
            const ResidencyFile& after = second.new_files.front();
            BOOST_TEST(after.id != before.id);
            BOOST_TEST(after.path == before.path);
            BOOST_TEST(after.device == before.device);
            BOOST_TEST(after.inode == before.inode);
            BOOST_TEST(after.size_bytes == large);
            BOOST_TEST(after.layout.file_pages == large / page_size());
            BOOST_TEST(after.layout.count == 256);
            // This run's rows name the new generation only: no row of zeros for the old one.
            BOOST_REQUIRE_EQUAL(second.mapped.size(), 1u);
            const MappedResidency& row = second.mapped.front();
            BOOST_TEST(row.file_id == after.id);
            BOOST_TEST(row.mapped_pages == large / page_size()); // 64 MiB mapped, clipped
            BOOST_TEST(static_cast<std::int64_t>(row.buckets.size()) == after.layout.count);
            BOOST_REQUIRE(oracle);
            BOOST_TEST(row.present_pages * page_size() / 1024 == oracle->rss_kb);
            BOOST_TEST(row.pss_kb.value_or(-1) == oracle->pss_kb);
            BOOST_REQUIRE_EQUAL(second.cache.size(), 1u);
            BOOST_TEST(second.cache.front().file_id == after.id);
            BOOST_TEST(second.cache.front().totals.cached == cached);
            BOOST_TEST(static_cast<std::int64_t>(second.cache.front().buckets.size()) ==
                       after.layout.count);

            // Readers see one file, at its latest size.
            const std::vector<ResidencyFile> generations{before, after};
            const auto latest = latest_generations(generations);
            BOOST_TEST(latest.at(before.id) == after.id);
            BOOST_REQUIRE_EQUAL(latest_files(generations).size(), 1u);
            BOOST_TEST(latest_files(generations).front().size_bytes == large);

            // Unchanged since: no new generation.
            ResidencySample third;
            sampler.sample(live, third, problems);
            BOOST_TEST(third.new_files.empty());
        }
    }
}

// A requested path that does not exist when the recording begins, then is created, then is
// replaced (rename over it, as a rebuilt dataset): each file is an object of its own.
BOOST_AUTO_TEST_CASE(a_requested_path_that_names_another_file_is_another_object) {
    TempDir dir;
    const std::string path = dir.file("dataset.bin"), next = dir.file("dataset.bin.new");
    ResidencyOptions options;
    options.files = {path};
    ResidencySampler sampler(options);
    Problems problems;
    ResidencySample absent;
    sampler.sample({}, absent, problems);
    BOOST_REQUIRE_EQUAL(absent.new_files.size(), 1u);
    BOOST_TEST(!absent.new_files.front().identified());

    make_file(path, 3 << 20);
    read_all(path);
    ResidencySample created;
    sampler.sample({}, created, problems);
    BOOST_REQUIRE_EQUAL(created.new_files.size(), 1u);
    const ResidencyFile first = created.new_files.front();
    BOOST_TEST(first.inode == inode_of(path));
    BOOST_TEST(first.size_bytes == 3 << 20);
    BOOST_TEST(first.requested);
    BOOST_REQUIRE_EQUAL(created.cache.size(), 1u);
    BOOST_TEST(created.cache.front().file_id == first.id);
    BOOST_TEST(created.cache.front().totals.cached == cached_pages(path));

    make_file(next, 5 << 20);
    std::filesystem::rename(next, path);
    ResidencySample replaced;
    sampler.sample({}, replaced, problems);
    BOOST_REQUIRE_EQUAL(replaced.new_files.size(), 1u);
    const ResidencyFile second = replaced.new_files.front();
    BOOST_TEST(second.inode == inode_of(path));
    BOOST_TEST(second.inode != first.inode);
    BOOST_TEST(second.size_bytes == 5 << 20);
    BOOST_TEST(second.requested);
    bool read_new = false;
    for (const CacheResidency& c : replaced.cache)
        if (c.file_id == second.id) {
            read_new = true;
            BOOST_TEST(c.totals.cached == cached_pages(path));
        }
    BOOST_TEST(read_new);
    // The unopened path became the first file; the replacement is another file.
    const std::vector<ResidencyFile> all{absent.new_files.front(), first, second};
    const auto latest = latest_generations(all);
    BOOST_TEST(latest.at(absent.new_files.front().id) == second.id);
    BOOST_TEST(latest.at(first.id) == first.id);
}

// The issue's case: a job builds its data file inside the recording (record's defaults) and reads
// it all. The report shows the file once, at its final size, with the process's RSS and PSS of it
// as the process's own smaps gives them at a paused moment after the growth.
BOOST_AUTO_TEST_CASE(a_file_grown_inside_a_recorded_job_is_reported_at_its_final_size) {
    const std::string python = "/usr/bin/python3";
    if (!precondition(std::filesystem::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    const std::string data = dir.file("built.mdb"), ready = dir.file("ready"), go = dir.file("go"),
                      db = dir.file("run.db");
    // Writes 4 MiB, maps and reads it, waits for the recorder's sample of that (a marker and its
    // acknowledgement), appends up to 40 MiB, maps the whole file afresh, reads it, says ready.
    const std::string script = R"(
import mmap, os, sys, time
path, ready, go = sys.argv[1:4]
def sampled_after(asked):
    while True:
        try:
            a, b = open(os.environ["LOADERLENS_SAMPLED"]).read().split()
            if a == b and int(a) >= asked: return
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
def read_all(m):
    return sum(m[i] for i in range(0, len(m), 4096))
block = b"\x01" * (1 << 20)
with open(path, "wb") as f:
    for _ in range(4): f.write(block)
fd = os.open(path, os.O_RDONLY)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
read_all(m)
asked = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
open(os.environ["LOADERLENS_MARKERS"], "a").write("small\n")
sampled_after(asked)
with open(path, "ab") as f:
    for _ in range(36): f.write(block)
m.close()
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
read_all(m)
open(ready, "w").close()
while not os.path.exists(go): time.sleep(0.005)
)";
    Child record(
        {cli_path(), "record", "-q", "-o", db, "--", python, "-c", script, data, ready, go});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(ready) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    BOOST_REQUIRE_MESSAGE(std::filesystem::exists(ready), "the job did not get ready");
    std::optional<SmapsOfFile> oracle;
    pid_t job = 0;
    {
        paused::PausedTree paused(record.pid());
        BOOST_REQUIRE_EQUAL(paused.processes().size(), 1u);
        job = *paused.processes().begin();
        BOOST_REQUIRE(paused::acknowledged_sample(db, "grown"));
        oracle = smaps_of_file(job, inode_of(data));
    }
    std::ofstream(go).close();
    const auto status = record.wait(std::chrono::seconds(60));
    BOOST_REQUIRE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    BOOST_REQUIRE(oracle);
    BOOST_TEST(oracle->rss_kb == 40 * 1024); // the job read it all

    Recording recording(db);
    const RecordingData all = recording.read_all();
    // The recording: one row per size the tier saw (4 MiB, 40 MiB), one identity.
    std::vector<const ResidencyFile*> generations;
    for (const auto& f : all.residency_files)
        if (f.path == data) generations.push_back(&f);
    BOOST_REQUIRE_GE(generations.size(), 2u);
    BOOST_TEST(generations.front()->size_bytes == 4 << 20);
    BOOST_TEST(generations.back()->size_bytes == 40 << 20);
    for (const ResidencyFile* f : generations)
        BOOST_TEST(f->inode == generations.front()->inode);

    // The row the paused sample wrote: the latest generation, the smaps figures.
    const std::int64_t grown_t = [&] {
        for (const auto& m : recording.markers())
            if (m.text == "grown") return m.t_ms;
        return std::int64_t{-1};
    }();
    BOOST_REQUIRE(grown_t >= 0);
    const Timed<MappedResidency>* at_pause = nullptr;
    for (const auto& row : all.mapped_residency)
        if (row.t_ms >= grown_t && file_with_id(all.residency_files, row.sample.file_id) &&
            file_with_id(all.residency_files, row.sample.file_id)->path == data) {
            at_pause = &row;
            break;
        }
    BOOST_REQUIRE(at_pause);
    BOOST_TEST(at_pause->sample.file_id == generations.back()->id);
    BOOST_TEST(at_pause->sample.present_pages * page_size() / 1024 == oracle->rss_kb);
    BOOST_TEST(at_pause->sample.pss_kb.value_or(-1) == oracle->pss_kb);

    // The report: the file once, at its final size; the process's peak RSS and PSS of it are the
    // paused moment's (the file only grew).
    const ReportData report = build_report(recording);
    std::vector<const FileResidencySummary*> shown;
    for (const auto& s : report.residency)
        if (s.file.path == data) shown.push_back(&s);
    BOOST_REQUIRE_EQUAL(shown.size(), 1u);
    BOOST_TEST(shown.front()->file.size_bytes == 40 << 20);
    BOOST_REQUIRE_EQUAL(shown.front()->processes.size(), 1u);
    const auto& per = shown.front()->processes.front();
    BOOST_TEST(per.rss.value.value_or(-1) == oracle->rss_kb);
    BOOST_TEST(per.pss.value.value_or(-1) == oracle->pss_kb);
    const std::string text = run({cli_path(), "report", db}).out;
    BOOST_TEST(text.find(data + "  (40.0 MiB") != std::string::npos, text);
    BOOST_TEST(text.find(data + "  (4.0 MiB") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
