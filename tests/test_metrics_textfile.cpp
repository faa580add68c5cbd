// SPDX-License-Identifier: MIT
// `record --metrics-textfile DIR/NAME.prom` (docs/metrics.md): rewritten every second while the
// command runs, each read a whole file in the 0.0.4 format (read back with the tests' own reader
// and promtool), its figures against the kernel and against the recording's JSON export, live 0
// at the end; bad names refused before the command; a full disk one warning, nothing lost. And
// the writer's escaping and gaps on a recording written with the Recorder.
#include "loaderlens/live_metrics.hpp"
#include "loaderlens/openmetrics.hpp"
#include "loaderlens/recorder.hpp"
#include "made_recordings.hpp"
#include "metrics_support.hpp"
#include "precondition.hpp"
#include "small_tmpfs.hpp"
#include "textfile_support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <set>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::int64_t mtime_ns(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return -1;
    return st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec;
}

long double sum_of(const Exposition& e, const std::string& name,
                   const std::map<std::string, std::string>& match) {
    long double sum = 0;
    for (const ExpositionSample* s : e.find(name, match))
        sum += std::stold(s->value);
    return sum;
}

} // namespace

BOOST_AUTO_TEST_SUITE(metrics_textfile)

BOOST_AUTO_TEST_CASE(rewritten_every_second_and_whole_at_each_read, *LOADERLENS_MAY_SKIP) {
    if (!precondition(has_promtool(), "promtool (Debian package prometheus) is not installed",
                      InCi::must_have))
        return;
    TempDir dir;
    std::filesystem::create_directory(dir.file("textfiles"));
    const std::string out = dir.file("run.db"), prom = dir.file("textfiles/ll.prom");
    Child recorder(record_argv(dir, out, {"--metrics-textfile", prom}, 4000), false);
    BOOST_REQUIRE(recorder.wait_for_line("ready 0", 20s));
    std::set<std::string> contents;
    std::set<std::int64_t> mtimes;
    int reads = 0;
    bool compared = false, ended = false;
    std::optional<int> status;
    while (!(status = recorder.wait(20ms))) {
        if (!std::filesystem::exists(prom)) continue;
        const std::string text = read_text(prom);
        ++reads;
        const Exposition e = parse_exposition(text, false);
        BOOST_REQUIRE_MESSAGE(e.error.empty(), "read " << reads << ": " << e.error);
        contents.insert(text);
        mtimes.insert(mtime_ns(prom));
        // 1 until the file left at the end (0), which may be read before the recorder is reaped.
        const auto live = e.value("loaderlens_recording_live");
        BOOST_TEST((live == 1.0L || live == 0.0L));
        BOOST_TEST(!(ended && live == 1.0L), "live 1 after live 0");
        ended = ended || live == 0.0L;
        for (const ExpositionSample& s : e.samples)
            BOOST_TEST(!s.labels.contains("pid"), s.name); // per slot, never per PID
        // Once both workers hold their memory: Σ RSS of the worker slots against the kernel's
        // figure for the workers (found below the recorder as the workload's children).
        const auto w0 =
            e.value("loaderlens_process_rss_bytes", {{"role", "worker"}, {"slot", "0"}});
        const auto w1 =
            e.value("loaderlens_process_rss_bytes", {{"role", "worker"}, {"slot", "1"}});
        if (compared || !w0 || !w1 || *w0 < 40 * mib || *w1 < 40 * mib) continue;
        const auto mains = children_of(recorder.pid());
        BOOST_REQUIRE(mains.size() == 1u);
        long double kernel = 0;
        for (pid_t worker : children_of(mains[0]))
            kernel += kernel_rss(worker);
        const long double written = sum_of(e, "loaderlens_process_rss_bytes", {{"role", "worker"}});
        BOOST_TEST_MESSAGE("workers' RSS: textfile " << static_cast<double>(written)
                                                     << " B, kernel "
                                                     << static_cast<double>(kernel));
        BOOST_TEST(std::abs(written - kernel) <= kernel / 50, written << " vs " << kernel);
        std::ofstream(dir.file("mid.prom")) << text;
        compared = true;
    }
    BOOST_REQUIRE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    BOOST_TEST(compared, "the textfile never showed both workers holding their memory");
    BOOST_TEST_MESSAGE(reads << " reads, " << contents.size() << " contents, " << mtimes.size()
                             << " mtimes");
    BOOST_TEST(contents.size() >= 3u); // a 4 s hold, rewritten every second
    BOOST_TEST(mtimes.size() >= 3u);

    const Exposition last = parse_exposition(read_text(prom), false);
    BOOST_REQUIRE_MESSAGE(last.error.empty(), last.error);
    BOOST_TEST(last.value("loaderlens_recording_live") == 0.0L);
    require_one_tick_tree_sums(last, run_json({cli_path(), "export", "--format", "json", out}));
    require_counted_as_the_report(last, run_json({cli_path(), "report", "--json", out}));
    // A running recorder stamps each rewrite; the file left at the end has no stamp, so an alert
    // on its age never fires for a recording that ended.
    BOOST_TEST(!last.value("loaderlens_textfile_write_timestamp_seconds"));
    const Exposition mid = parse_exposition(read_text(dir.file("mid.prom")), false);
    BOOST_TEST(mid.value("loaderlens_textfile_write_timestamp_seconds").has_value());
    for (const char* figure : {"rss", "peak_rss", "pss", "rss_anon"})
        BOOST_TEST(mid.value(std::string("loaderlens_recorder_") + figure + "_bytes") > 1 * mib,
                   figure);
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.file("textfiles")))
        names.push_back(entry.path().filename().string());
    BOOST_TEST(names == std::vector<std::string>{"ll.prom"}); // no temporary file left
    for (const std::string& file : {dir.file("mid.prom"), prom}) {
        const PromtoolResult lint = promtool_check(file);
        BOOST_TEST(lint.exit_code == 0, file << ": " << lint.err << lint.out);
        BOOST_TEST(lint.err.empty(), lint.err);
    }
}

BOOST_AUTO_TEST_CASE(bad_names_exit_2_before_the_command) {
    TempDir dir;
    std::ofstream(dir.file("afile")) << "x\n";
    std::filesystem::create_directory(dir.file("adir.prom"));
    const RunResult made =
        run({cli_path(), "record", "-q", "-o", dir.file("old.db"), "--", "true"});
    BOOST_REQUIRE(made.exit_code == 0);
    std::filesystem::copy_file(dir.file("old.db"), dir.file("old.prom"));
    const std::string ran = dir.file("ran");
    auto refused = [&](const std::string& textfile, const std::string& words,
                       const std::string& output) {
        const RunResult r = run({cli_path(), "record", "-q", "-o", output, "--metrics-textfile",
                                 textfile, "--", "/bin/sh", "-c", "touch " + ran});
        BOOST_TEST(r.exit_code == 2, textfile << ": exit " << r.exit_code << " " << r.err);
        BOOST_TEST(one_line(r.err), r.err);
        BOOST_TEST(r.err.find("--metrics-textfile " + textfile) != std::string::npos, r.err);
        BOOST_TEST(r.err.find(words) != std::string::npos, r.err);
        BOOST_TEST(!std::filesystem::exists(ran), textfile << ": the command ran");
        BOOST_TEST(!std::filesystem::exists(output), textfile << ": a recording was left");
    };
    const std::string db = dir.file("r.db");
    refused(dir.file("missing/ll.prom"), "No such file or directory", db);
    refused(dir.file("ll.txt"), "must end in .prom", db);
    refused(dir.file("afile/ll.prom"), "not a directory", db);
    refused(dir.file("adir.prom"), "not a regular file", db);
    refused(dir.file("old.prom"), "SQLite", db);
    refused(dir.file("r.prom"), "a file of this run", dir.file("r.prom"));
    BOOST_TEST(read_text(dir.file("old.prom")) == read_text(dir.file("old.db")));
}

// N13: a directory of the textfile's path swapped for a symbolic link mid-run (by whoever can
// write its parent) must not redirect the writes: they go on in the directory opened at the
// start. The swap is made after the first write is seen; the command ends once a write after the
// swap is seen (in either place), so the test waits on events, not on time.
BOOST_AUTO_TEST_CASE(a_directory_swapped_mid_run_redirects_nothing) {
    TempDir dir;
    std::filesystem::create_directories(dir.file("shared/sub"));
    std::filesystem::create_directory(dir.file("elsewhere"));
    const std::string prom = dir.file("shared/sub/x.prom"), stop = dir.file("stop");
    Child recorder({cli_path(), "record", "-q", "-o", dir.file("run.db"), "--metrics-textfile",
                    prom, "--", "/bin/sh", "-c",
                    "while [ ! -e " + stop + " ]; do sleep 0.05; done"},
                   false);
    std::optional<int> status;
    while (!std::filesystem::exists(prom) && !(status = recorder.wait(20ms))) {
    }
    BOOST_REQUIRE_MESSAGE(!status, "the recorder ended before its first write");
    const std::int64_t first = mtime_ns(prom);
    std::filesystem::rename(dir.file("shared/sub"), dir.file("shared/moved"));
    std::filesystem::create_directory_symlink(dir.file("elsewhere"), dir.file("shared/sub"));
    const std::string moved = dir.file("shared/moved/x.prom");
    const std::string redirected = dir.file("elsewhere/x.prom");
    for (int i = 0; i < 1000 && !status; ++i) { // at most 20 s: a write comes each second
        if (mtime_ns(moved) != first || std::filesystem::exists(redirected)) break;
        status = recorder.wait(20ms);
    }
    std::ofstream(stop) << "";
    if (!status) status = recorder.wait(20s);
    BOOST_REQUIRE(status);
    BOOST_TEST((WIFEXITED(*status) && WEXITSTATUS(*status) == 0));
    BOOST_TEST(std::filesystem::is_empty(dir.file("elsewhere")), "a write went through the link");
    BOOST_TEST(mtime_ns(moved) != first, "no write after the swap in the directory opened");
    const Exposition last = parse_exposition(read_text(moved), false);
    BOOST_TEST(last.value("loaderlens_recording_live") == 0.0L);
}

// A textfile directory that fills up mid-run: one warning, the command's exit status and the
// recording untouched; written again once there is room, live 0 at the end. A read-only one is
// refused before the command.
BOOST_AUTO_TEST_CASE(a_full_disk_is_one_warning_and_nothing_lost, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    SmallTmpfs tmpfs(dir, 64);
    BOOST_REQUIRE_MESSAGE(tmpfs.mounted(), tmpfs.error());
    const std::string prom = tmpfs.file("ll.prom"), filler = tmpfs.file("filler");
    const std::string script = "sleep 1.5; head -c 1048576 /dev/zero > " + filler +
                               " 2>/dev/null; sleep 2.5; rm " + filler + "; sleep 1.5; exit 7";
    const RunResult r = run({cli_path(), "record", "-q", "-o", dir.file("run.db"),
                             "--metrics-textfile", prom, "--", "/bin/sh", "-c", script});
    BOOST_TEST(r.exit_code == 7, r.err);
    BOOST_TEST(one_line(r.err), "stderr: " << r.err);
    BOOST_TEST(r.err.find("--metrics-textfile " + prom) != std::string::npos, r.err);
    BOOST_TEST(r.err.find("No space left on device") != std::string::npos, r.err);
    BOOST_TEST(Recording(dir.file("run.db")).meta("state") == "finished");
    const Exposition last = parse_exposition(read_text(prom), false);
    BOOST_REQUIRE_MESSAGE(last.error.empty(), last.error);
    BOOST_TEST(last.value("loaderlens_recording_live") == 0.0L);
    std::vector<std::string> names; // the failed writes left no temporary file
    for (const auto& entry : std::filesystem::directory_iterator(tmpfs.path()))
        names.push_back(entry.path().filename().string());
    BOOST_TEST(names == std::vector<std::string>{"ll.prom"});

    const std::string ro = dir.file("ro");
    std::filesystem::create_directory(ro);
    BOOST_REQUIRE(::mount("tmpfs", ro.c_str(), "tmpfs", MS_RDONLY, "size=64k") == 0);
    const RunResult refused = run({cli_path(), "record", "-q", "-o", dir.file("ro.db"),
                                   "--metrics-textfile", ro + "/ll.prom", "--", "true"});
    ::umount2(ro.c_str(), MNT_DETACH);
    BOOST_TEST(refused.exit_code == 2, refused.err);
    BOOST_TEST(one_line(refused.err), refused.err);
    BOOST_TEST(refused.err.find("Read-only file system") != std::string::npos, refused.err);
}

// Label values escaped as the formats want (\\ \" \n, bytes that are not UTF-8 as U+FFFD), and a
// figure that was unavailable left out, never 0: in the export and in the textfile.
BOOST_AUTO_TEST_CASE(labels_escaped_and_unavailable_figures_left_out) {
    TempDir dir;
    const std::string path = dir.file("made.db");
    const std::string host = "node \"7\"\\a\nb", file = "/data/we\"ird\\na\nme\xff.npy";
    {
        Recorder recorder(path, false);
        recorder.set_meta("host", host);
        recorder.set_meta("slurm_job_id", "4242");
        recorder.set_meta("start_unix_ns", "1795000000000000000");
        SampleBatch b;
        b.t_ms = 100;
        ProcessInfo main, worker;
        main.id = 1;
        main.key = {100, 1};
        main.role = Role::main;
        worker.id = 2;
        worker.key = {101, 2};
        worker.role = Role::worker;
        worker.slot = worker.generation = 0;
        b.born = {main, worker};
        b.fast.push_back({.process_id = 1, .rss = 1000, .rss_file = 10, .rss_shmem = 0, .swap = 0});
        b.fast.push_back({.process_id = 2, .rss = 2000, .rss_anon = 5, .rss_file = 6});
        b.rollup.push_back({.process_id = 1, .pss = 500});
        b.rollup.push_back({.process_id = 2, .rss = 2000}); // PSS unreadable
        ResidencyFile f;
        f.id = 1;
        f.path = file;
        f.inode = 7;
        f.size_bytes = 8 * 4096;
        f.layout = BucketLayout::make(8, 2);
        f.method = CacheMethod::cachestat;
        b.residency.new_files.push_back(f);
        b.residency.cache.push_back({.file_id = 1, .totals = {.cached = 6}, .buckets = {4, 2}});
        b.residency.mapped.push_back({.file_id = 1,
                                      .process_id = 2,
                                      .mapped_pages = 8,
                                      .present_pages = 5,
                                      .buckets = {4, 1},
                                      .pss_kb = 20});
        recorder.write(b);
        SampleBatch later;
        later.t_ms = 200;
        later.fast.push_back({.process_id = 1, .rss = 1100}); // its split unreadable now
        recorder.write(later);
        recorder.finish("finished", 300);
    }
    recording_made(path);
    std::ostringstream exported;
    export_openmetrics(Recording(path), exported);
    Recording reading(path);
    Cursor cursor;
    LiveMetrics live;
    live.add(reading.read_new(cursor));
    const std::string written = live.textfile(true);
    for (const bool openmetrics : {true, false}) {
        const Exposition e = parse_exposition(openmetrics ? exported.str() : written, openmetrics);
        BOOST_REQUIRE_MESSAGE(e.error.empty(), e.error);
        for (const ExpositionSample& s : e.samples) {
            BOOST_TEST(s.labels.at("node") == host, s.name);
            BOOST_TEST(s.labels.at("slurm_job") == "4242", s.name);
        }
        const std::map<std::string, std::string> main{{"role", "main"}},
            worker{{"role", "worker"}, {"slot", "0"}};
        BOOST_TEST(e.value("loaderlens_process_rss_bytes", main) == 1100 * 1024.0L);
        BOOST_TEST(!e.value("loaderlens_process_rss_file_bytes", main)); // its latest row: n/a
        // The export: each process's last row; the textfile: the latest tick's rows (a process
        // not in it has exited), where the worker has none.
        BOOST_TEST(e.value("loaderlens_process_rss_file_bytes", worker) ==
                   (openmetrics ? std::optional(6 * 1024.0L) : std::nullopt));
        BOOST_TEST(!e.value("loaderlens_process_swap_bytes", worker));
        BOOST_TEST(!e.value("loaderlens_process_pss_bytes", worker));
        BOOST_TEST(e.value("loaderlens_tree_pss_bytes") == 500 * 1024.0L); // the readable one
        BOOST_TEST(!e.value("loaderlens_tree_uss_bytes"));
        BOOST_TEST(e.find("loaderlens_process_pss_bytes", {{"pid", "101"}}).size() == 0u);
        BOOST_TEST(e.find("loaderlens_process_rss_bytes", {{"pid", "100"}}).size() ==
                   (openmetrics ? 1u : 0u));
        const std::map<std::string, std::string> data{{"file", "/data/we\"ird\\na\nme\uFFFD.npy"}};
        BOOST_TEST(e.value("loaderlens_file_cached_bytes", data) == 6 * 4096.0L);
        BOOST_TEST(e.value("loaderlens_file_rss_bytes", data) == 5 * 4096.0L);
        BOOST_TEST(e.value("loaderlens_file_pss_bytes", data) == 20 * 1024.0L);
        BOOST_TEST(e.value("loaderlens_recording_live") == (openmetrics ? 0.0L : 1.0L));
        BOOST_TEST(e.value("loaderlens_sample_timestamp_seconds") == 1795000000.2L);
    }
}

BOOST_AUTO_TEST_SUITE_END()
