// SPDX-License-Identifier: MIT
// Stable, quiet verdicts (issue 26, item 5). One scenario recorded 5 times gives the same finding
// kinds and severities every time: a .npy mapped by 4 workers, the case whose shared-file finding
// flipped between warning and info with the file's share of Σ RSS. Code (any file some process
// maps executable) never makes a finding of its own, where a data file mapped alike does; the
// oracle is the test's own mmap(2) flags. A worker forked but not yet seen by the tracker is the
// tree's, not a process outside it that shares the file.
#include "finding_support.hpp"
#include "loaderlens/maps_sampler.hpp"
#include "loaderlens/outside_sharers.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/report.hpp"
#include "made_recordings.hpp"
#include "precondition.hpp"
#include "replay_support.hpp"
#include "residency_children.hpp"

#include <array>
#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <functional>
#include <set>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace loaderlens::test::residency;
using namespace std::chrono_literals;

namespace {

// "kind/severity" of every finding, sorted: what must not change between identical runs.
std::multiset<std::string> verdict(const ReportData& report) {
    std::multiset<std::string> out;
    for (const Finding& f : report.diagnosis.findings)
        out.insert(f.kind + "/" + to_string(f.severity));
    return out;
}

std::string text_of(const std::multiset<std::string>& v) {
    std::string out;
    for (const std::string& s : v)
        out += s + " ";
    return out;
}

// A process forked by `self` that touches every page of the mappings in `bases` and holds;
// dies with its parent.
void fork_toucher(Forked& self, const std::vector<std::pair<char*, std::size_t>>& bases) {
    const pid_t pid = ::fork();
    if (pid != 0) return;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    unsigned sum = 0;
    for (const auto& [base, bytes] : bases)
        for (std::size_t at = 0; at < bytes; at += static_cast<std::size_t>(page_size()))
            sum += *reinterpret_cast<volatile unsigned char*>(base + at);
    self.send("child " + std::to_string(sum));
    for (;;)
        ::pause();
}

char* map_file(const std::string& path, std::size_t bytes, int prot) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return nullptr;
    void* base = ::mmap(nullptr, bytes, prot, MAP_PRIVATE, fd, 0);
    ::close(fd);
    return base == MAP_FAILED ? nullptr : static_cast<char*>(base);
}

// Records `runs` times (`record_one` writes the recording it is given) and requires one verdict.
// Prints each run's findings, and the mapped file's share of the peak Σ RSS: the figure whose 25%
// edge decided shared_file_cache's severity before (it sat there in the case).
std::vector<ReportData> record_alike(const TempDir& dir, int runs,
                                     const std::function<void(const std::string&)>& record_one) {
    std::vector<ReportData> reports;
    std::vector<std::multiset<std::string>> verdicts;
    for (int i = 0; i < runs; ++i) {
        const std::string out = dir.file("run" + std::to_string(i) + ".db");
        record_one(out);
        Recording recording(out);
        reports.push_back(build_report(recording));
        const ReportData& report = reports.back();
        verdicts.push_back(verdict(report));
        std::string detail;
        for (const Finding& f : report.diagnosis.findings) {
            detail += "\n  [" + std::string(to_string(f.severity)) + "] " + f.kind + " " +
                      f.figure_name + "=" + std::to_string(f.figure) + ", explains " +
                      std::to_string(f.explains_kb) + " KiB";
            if (f.kind == "shared_file_cache" && f.figure > 1 && report.totals.rss.value)
                detail +=
                    fmt::format(" (file's Σ RSS {:.3f} of the peak Σ RSS)",
                                static_cast<double>(f.explains_kb) * f.figure / (f.figure - 1) /
                                    static_cast<double>(*report.totals.rss.value));
        }
        BOOST_TEST_MESSAGE("run " << i << ":" << detail);
        std::filesystem::remove(out);
    }
    for (std::size_t i = 1; i < verdicts.size(); ++i)
        BOOST_TEST(verdicts[i] == verdicts[0], "run " << i << ": " << text_of(verdicts[i])
                                                      << "; run 0: " << text_of(verdicts[0]));
    return reports;
}

} // namespace

BOOST_AUTO_TEST_SUITE(verdict_stability)

// The case with the reference loader: np.load(mmap_mode='r') of a .npy, 4 persistent
// workers, 3 epochs, each worker reading part of the file, and 48 MiB built in main before fork
// (an interpreter's heap): the file is 25.5% of the peak Σ RSS. Five recordings: one verdict.
BOOST_AUTO_TEST_CASE(same_scenario_five_times_same_findings) {
    TempDir dir;
    const std::string data = dir.file("x.npy");
    // 2048 rows of 4096 float32: 32 MiB.
    mkdata({"npy", data, "--count", "2048", "--shape", "4096", "--dtype", "f4"});
    const auto reports = record_alike(dir, 5, [&](const std::string& out) {
        replay(out, {data, "--workers", "4", "--batch", "4", "--epochs", "3", "--persistent",
                     "--pattern", "random", "--num-samples", "64", "--step-time", "10ms",
                     "--prefork-anon", "48"});
    });
    // The file and main's buffer are shared by the workers: named in every run; no limit, so
    // information.
    const auto v = verdict(reports.front());
    BOOST_TEST(v.count("shared_file_cache/info") == 1u, text_of(v));
    BOOST_TEST(v.count("inherited_anon/info") == 1u, text_of(v));
}

// The same with real PyTorch (user report 000's setup: 62.5 MiB .npy mapped in the Dataset's
// __init__, 5 workers re-forked each epoch, 2 epochs), where the file measured 24.8% of the peak
// Σ RSS three times. The interpreter (python3, mapped executable) makes no finding. Main freezes
// its garbage collector before the workers start: a full collection in a worker copies 24 MiB of
// main's objects, and whether one comes depends on the job's allocations (1 of 39 runs under
// load had one, and a true copy_on_read with it): the job must do the same thing each run.
BOOST_AUTO_TEST_CASE(pytorch_five_times_same_findings, *LOADERLENS_MAY_SKIP) {
    const std::string python = "/usr/bin/python3";
    const bool has_torch = run({python, "-c", "import torch, numpy"}).exit_code == 0;
    if (!precondition(has_torch, "python3-torch is not installed (" + python + ")",
                      InCi::must_have))
        return;
    const std::string script = std::string(LOADERLENS_FIXTURES_DIR) + "/../pytorch/seed000_mmap.py";
    TempDir dir;
    const std::string data = dir.file("x_data.npy");
    mkdata({"npy", data, "--count", "4000", "--shape", "4096", "--dtype", "f4"});
    const auto reports = record_alike(dir, 5, [&](const std::string& out) {
        const RunResult r = run({cli_path(), "record", "-q", "-o", out, "--", python, script, data,
                                 "2", "0.03", "freeze"},
                                std::chrono::seconds(180));
        BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    });
    for (const ReportData& report : reports)
        for (const Finding& f : report.diagnosis.findings)
            BOOST_TEST(f.file.find("python3") == std::string::npos, f.kind << ": " << f.title);
    BOOST_TEST(verdict(reports.front()).count("shared_file_cache/info") == 1u);
}

// A tree of 4 processes maps two files of 8 MiB alike (MAP_PRIVATE, every page touched): one
// read-only (data), one with PROT_EXEC (code, as a program or library is mapped). Recorded with
// `record --pid`: the data file gets its shared_file_cache finding, the code file none, and the
// recording says which one was mapped executable.
BOOST_AUTO_TEST_CASE(code_never_makes_a_finding_of_its_own, *LOADERLENS_MAY_SKIP) {
    TempDir dir;
    const std::string data = dir.file("samples.bin"), code = dir.file("tool.bin");
    constexpr std::size_t bytes = 8u << 20;
    make_file(data, bytes);
    make_file(code, bytes);
    // A file system mounted noexec refuses PROT_EXEC: nothing to test there.
    char* probe = map_file(code, bytes, PROT_READ | PROT_EXEC);
    if (!precondition(probe != nullptr, dir.path().string() + " refuses PROT_EXEC mappings",
                      InCi::must_have))
        return;
    ::munmap(probe, bytes);

    Forked root([&](Forked& self) {
        char* d = map_file(data, bytes, PROT_READ);
        char* c = map_file(code, bytes, PROT_READ | PROT_EXEC);
        if (!d || !c) return self.send("error mmap");
        for (int i = 0; i < 3; ++i)
            fork_toucher(self, {{d, bytes}, {c, bytes}});
        unsigned sum = 0;
        for (std::size_t at = 0; at < bytes; at += static_cast<std::size_t>(page_size()))
            sum += static_cast<unsigned>(d[at]) + static_cast<unsigned>(c[at]);
        self.send("root " + std::to_string(sum));
        for (;;)
            ::pause();
    });
    for (int i = 0; i < 4; ++i) {
        const std::string line = root.receive(30s);
        BOOST_REQUIRE_MESSAGE(line.starts_with("child ") || line.starts_with("root "),
                              "the tree said '" << line << "'");
    }
    const std::string out = dir.file("tree.db");
    Child recorder({cli_path(), "record", "-q", "-o", out, "--pid", std::to_string(root.pid()),
                    "--interval", "maps=200ms", "--cpu-budget", "50%"});
    // Until a maps sample holds both files in all 4 processes (the recorder's own rows: the
    // moment the figures the finding needs are in the recording).
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    for (;;) {
        BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                              "no maps sample of both files in 4 processes within 60 s");
        std::this_thread::sleep_for(100ms); // polling the file, not a synchronisation
        if (!std::filesystem::exists(out)) continue;
        try {
            Recording live(out);
            const std::int64_t d = object_id_of(live, "/samples.bin"),
                               c = object_id_of(live, "/tool.bin");
            if (d < 0 || c < 0) continue;
            std::map<std::int64_t, std::set<std::int64_t>> by_tick; // t -> processes with both
            std::map<std::pair<std::int64_t, std::int64_t>, int> seen;
            for (const MapRow& row : live.maps())
                if ((row.object_id == d || row.object_id == c) &&
                    ++seen[{row.t_ms, row.process_id}] == 2)
                    by_tick[row.t_ms].insert(row.process_id);
            bool all = false;
            for (const auto& [t, processes] : by_tick)
                all = all || processes.size() == 4;
            if (all) break;
        } catch (const std::exception&) {
            continue; // the recording's first moments
        }
    }
    ::kill(root.pid(), SIGKILL); // its children die with it: the recording ends
    const auto status = recorder.wait(30s);
    BOOST_REQUIRE(status.has_value());

    Recording recording(out);
    std::int64_t code_id = -1;
    for (const ObjectInfo& o : recording.objects()) {
        if (o.path == code) BOOST_TEST(o.executable.value_or(false), "code not flagged");
        if (o.path == data) BOOST_TEST(!o.executable.value_or(true), "data flagged executable");
        if (o.path == code) code_id = o.id;
    }
    // The code file is shared as the data file is (what a file needs for shared_file_cache: Σ RSS
    // at least 1.5 x Σ PSS and 4 MiB above it, 2 processes or more): only its being code keeps
    // it out of the verdict.
    std::map<std::int64_t, std::array<std::int64_t, 3>> code_ticks; // t -> Σ RSS, Σ PSS, n
    for (const MapRow& row : recording.maps())
        if (row.object_id == code_id) {
            auto& [rss, pss, n] = code_ticks[row.t_ms];
            rss += row.figures.rss_kb;
            pss += row.figures.pss_kb;
            ++n;
        }
    bool shared_alike = false;
    for (const auto& [t, sums] : code_ticks)
        shared_alike = shared_alike || (sums[2] >= 2 && sums[0] >= 3 * sums[1] / 2 &&
                                        sums[0] - sums[1] >= 4 * 1024);
    BOOST_TEST(shared_alike, "the code file was not shared by the tree");
    const ReportData report = build_report(recording);
    int data_findings = 0;
    for (const Finding& f : report.diagnosis.findings) {
        BOOST_TEST(f.file != code, f.kind << " about the code file: " << f.title);
        if (f.kind == "shared_file_cache" && f.file == data) ++data_findings;
    }
    BOOST_TEST(data_findings == 1, kinds(report));

    // The same recording as schema 7 (without the column, by SQLite itself through Python): the
    // flag is unknown, the name rule is all there is, and tool.bin is taken for data again. What
    // keeps it out of the verdict above is the recorded flag.
    sqlite_exec(out, "ALTER TABLE objects DROP COLUMN executable");
    sqlite_exec(out, "PRAGMA user_version = 7");
    Recording old(out);
    BOOST_TEST(old.schema() == 7);
    for (const ObjectInfo& o : old.objects())
        BOOST_TEST(!o.executable.has_value());
    const ReportData old_report = build_report(old);
    int code_findings = 0;
    for (const Finding& f : old_report.diagnosis.findings)
        if (f.file == code) ++code_findings;
    BOOST_TEST(code_findings == 1, kinds(old_report));
}

// A tree's root maps a file and forks a worker that maps it too; the tree is the root alone (its
// worker not seen yet). A process outside the tree maps the file as well. Outside sharers: 1.
BOOST_AUTO_TEST_CASE(unseen_worker_is_not_an_outside_sharer) {
    DataFile file;
    const std::uint64_t bytes = file_pages * page_size();
    Forked root([&](Forked& self) {
        char* base = map_file(file.path, bytes, PROT_READ);
        if (!base) return self.send("error mmap");
        fork_toucher(self, {{base, bytes}});
        self.send("root");
        for (;;)
            ::pause();
    });
    for (int i = 0; i < 2; ++i) {
        const std::string line = root.receive(30s);
        BOOST_REQUIRE_MESSAGE(line.starts_with("child ") || line == "root",
                              "the tree said '" << line << "'");
    }
    auto outside = start_mapper({{.path = file.path, .length = bytes}}, {});
    struct stat st {};
    BOOST_REQUIRE(::stat(file.path.c_str(), &st) == 0);
    const std::pair<std::uint64_t, std::uint64_t> key{0, st.st_ino}; // 0: any device
    const OutsideSharerCount count = count_outside_sharers({root.pid()}, {key});
    auto it = count.sharers.find(key);
    BOOST_TEST((it == count.sharers.end() ? 0 : it->second) == 1);
}

// The dynamic loader maps a library read-only before it maps its code: a sample may see only
// that. Parsed from a captured smaps text, the object is code once any mapping of it has 'x'; and
// an object recorded read-only, then seen executable, is read back as code.
BOOST_AUTO_TEST_CASE(an_object_is_code_once_any_mapping_of_it_is_executable) {
    const std::string smaps = "7f0000000000-7f0000100000 r--p 00000000 08:01 1234   /opt/lib/tool\n"
                              "Rss:                1024 kB\n"
                              "Pss:                 512 kB\n"
                              "7f0000100000-7f0000300000 r-xp 00100000 08:01 1234   /opt/lib/tool\n"
                              "Rss:                2048 kB\n"
                              "Pss:                1024 kB\n"
                              "7f0000400000-7f0000600000 r--s 00000000 08:01 99     /data/x.npy\n"
                              "Rss:                2048 kB\n"
                              "Pss:                1024 kB\n";
    std::map<std::string, bool> executable;
    for (const MappedObject& o : aggregate_smaps(smaps, 1024))
        executable[o.path] = o.executable;
    BOOST_TEST(executable.at("/opt/lib/tool"));
    BOOST_TEST(!executable.at("/data/x.npy"));

    TempDir dir;
    const std::string path = dir.file("later.db");
    {
        Recorder recorder(path, false);
        for (int t = 0; t < 2; ++t) {
            SampleBatch b;
            b.t_ms = t * 100;
            if (t == 0) {
                ProcessInfo p;
                p.id = 1;
                p.key = {4242, 1};
                p.role = Role::main;
                b.born.push_back(p);
            }
            MappedObject tool{.kind = MappingKind::file, .path = "/opt/lib/tool", .inode = 1234};
            tool.rss_kb = 1024;
            tool.executable = t == 1; // read-only at the first sample, its code mapped by the next
            MappedObject data{.kind = MappingKind::file, .path = "/data/x.npy", .inode = 99};
            data.rss_kb = 2048;
            b.maps.push_back({1, {tool, data}});
            recorder.write(b);
        }
        recorder.finish("finished", 300);
    }
    recording_made(path);
    Recording recording(path);
    std::map<std::string, std::optional<bool>> flags;
    for (const ObjectInfo& o : recording.objects())
        flags[o.path] = o.executable;
    BOOST_TEST(flags.at("/opt/lib/tool").value_or(false)); // not NULL, and 1
    BOOST_TEST(!flags.at("/data/x.npy").value_or(true));   // not NULL, and 0
}

BOOST_AUTO_TEST_SUITE_END()
