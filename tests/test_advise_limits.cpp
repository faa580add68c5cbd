// SPDX-License-Identifier: MIT
// `advise` on input it cannot run and under signals (tester's N8, N11, N14): a value no setting
// can run with and a dataset the loader finds damaged mid-run are bad input (exit 2, one line,
// nothing on stdout), never "nothing fits" (3); a --full-grid too large to walk is refused before
// it is built; and a signal at any moment (at once, as its temporary directory appears, during a
// replay) leaves no directory behind. The moments are found with inotify, not with sleeps.
#include "directory_wait.hpp"
#include "loaderlens/probes/dataset.hpp"
#include "loaderlens/probes/mkdata.hpp"
#include "replay_support.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

// 1024 records of 4 KiB; the replays' temporary directories go to `tmp`.
struct Dataset {
    TempDir dir;
    std::string npy = dir.file("images.npy");
    std::string tmp = dir.file("tmp");
    Dataset() {
        mkdata({"npy", npy, "--size", "4MiB", "--shape", "4096", "--dtype", "u1"});
        fs::create_directory(tmp);
    }
    // advise with TMPDIR set to `tmp` (through env: the same process, exec'd).
    std::vector<std::string> advise(const std::vector<std::string>& args) const {
        std::vector<std::string> argv{"/usr/bin/env", "TMPDIR=" + tmp, cli_path(), "advise"};
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
    }
};

void require_bad_input(const RunResult& r, const std::string& named, const std::string& tmp) {
    BOOST_TEST_CONTEXT(named << ": exit " << r.exit_code << ", " << r.err) {
        BOOST_TEST(r.exit_code == 2);
        BOOST_TEST(lines_of(r.err).size() == 1u);
        BOOST_TEST(r.err.find(named) != std::string::npos);
        BOOST_TEST(r.out.empty());
        BOOST_TEST(fs::is_empty(tmp)); // nothing was made for a run
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(advise_limits)

// A grid value no setting can run with: refused before any replay, in the one line the loader's
// own check gives, not a table of failed rows and exit 3.
BOOST_AUTO_TEST_CASE(a_value_no_setting_can_run_with_is_refused_before_any_run) {
    Dataset data;
    const std::vector<std::string> common{
        "--mem-limit", "4G", "--read", "pread", "--persistent", "no", "--epochs", "1", "-q"};
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--workers", "4096"}, "--workers 4096"},
        {{"--workers", "1,4096"}, "--workers 4096"},
        {{"--workers", "1", "--readahead", "off"}, "--readahead off"},
        {{"--workers", "1,2", "--readahead", "on,off"}, "--readahead"},
    };
    for (const auto& [args, named] : cases) {
        std::vector<std::string> all{data.npy};
        all.insert(all.end(), common.begin(), common.end());
        all.insert(all.end(), args.begin(), args.end());
        require_bad_input(run(data.advise(all)), named, data.tmp);
    }
}

// Record 30's key renamed in its leaf: inspect reads only the first and last records, the loader
// finds the hole mid-run and exits 2 naming the dataset; advise ends there with that line.
BOOST_AUTO_TEST_CASE(a_dataset_damaged_mid_run_is_bad_input) {
    Dataset data;
    probes::MkdataOptions options;
    options.kind = probes::DatasetKind::lmdb;
    options.path = data.dir.file("good");
    options.count = 64;
    options.record_bytes = 1024;
    options.seed = 3;
    probes::make_dataset(options);
    std::ifstream in(options.path + "/data.mdb", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = probes::lmdb_key(30);
    const std::size_t at = bytes.rfind(key);
    BOOST_REQUIRE(at != std::string::npos);
    bytes[at + 7] = static_cast<char>(0x7f);
    const std::string damaged = data.dir.file("damaged");
    fs::create_directory(damaged);
    std::ofstream(damaged + "/data.mdb", std::ios::binary) << bytes;
    const RunResult r =
        run(data.advise({damaged, "--mem-limit", "4G", "--workers", "0,1", "--persistent", "no",
                         "--pattern", "sequential", "--epochs", "1", "-q"}),
            std::chrono::seconds(120));
    BOOST_TEST_CONTEXT(r.err) {
        BOOST_TEST(r.exit_code == 2);
        BOOST_TEST(lines_of(r.err).size() == 1u);
        BOOST_TEST(r.err.find(damaged) != std::string::npos);
        BOOST_TEST(r.out.empty());
        BOOST_TEST(fs::is_empty(data.tmp));
    }
}

// 80,000 combinations with a budget of 1 s: before, every one was built and listed as "not run"
// (exit 3, a table of 80,000 rows); a product past 2^64 in 1 GiB of address space cannot be
// built at all. Both are refused from the counts alone, naming the lists.
BOOST_AUTO_TEST_CASE(a_full_grid_too_large_is_refused_before_it_is_built) {
    Dataset data;
    auto list = [](int n) {
        std::string out;
        for (int i = 1; i <= n; ++i)
            out += (i > 1 ? "," : "") + std::to_string(i);
        return out;
    };
    require_bad_input(run(data.advise({data.npy, "--mem-limit", "4G", "--full-grid", "--budget",
                                       "1s", "--workers", list(100), "--batch", list(200), "--read",
                                       "pread,mmap-view", "--epochs", "2"})),
                      "--full-grid: --workers (100) x --read (2) x --persistent (2) x --batch "
                      "(200): 80000 settings, more than 1000",
                      data.tmp);
    std::string line = "ulimit -v 1048576; exec";
    for (const std::string& a :
         data.advise({data.npy, "--mem-limit", "4G", "--full-grid", "--workers", list(4000),
                      "--batch", list(5000), "--prefetch", list(1000), "--advice",
                      "normal,random,sequential,willneed", "--pin", "no,yes"}))
        line += " '" + a + "'";
    require_bad_input(run({"/bin/sh", "-c", line}), "settings, more than 1000", data.tmp);
    // Two rounds are bounded alike: round one's product and the other values.
    require_bad_input(run(data.advise({data.npy, "--mem-limit", "4G", "--workers", list(600),
                                       "--read", "pread,mmap-view"})),
                      "--workers (600), --read (2), --persistent (2): 1201 settings", data.tmp);
}

// SIGINT, SIGTERM and SIGHUP at three moments: at once, as the temporary directory appears (it
// was left, empty, before: the signal killed advise before the replays' handling), and once the
// first replay's recording is in it. Each ends advise by that signal with the directory gone.
BOOST_AUTO_TEST_CASE(a_signal_at_any_moment_leaves_no_directory) {
    Dataset data;
    const std::vector<std::string> args =
        data.advise({data.npy, "--json", "-q", "--mem-limit", "4G", "--workers", "1,2", "--read",
                     "pread", "--persistent", "no", "--transform-time", "1ms", "--epochs", "1"});
    std::string line = "exec";
    for (const std::string& a : args)
        line += " '" + a + "'";
    line += " > /dev/null";
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        for (const std::string moment : {"at once", "directory made", "recording made"}) {
            Child advise({"/bin/sh", "-c", line}, false);
            std::string directory;
            if (moment != "at once") {
                directory = wait_for_entry(
                    data.tmp, [](const std::string&) { return true; }, std::chrono::seconds(30));
                BOOST_REQUIRE(!directory.empty());
            }
            if (moment == "recording made")
                BOOST_TEST(!wait_for_entry(
                                directory,
                                [](const std::string& name) { return name.ends_with(".db"); },
                                std::chrono::seconds(30))
                                .empty());
            kill(advise.pid(), sig);
            const auto status = advise.wait(std::chrono::seconds(60));
            BOOST_TEST_CONTEXT(strsignal(sig) << " " << moment) {
                BOOST_REQUIRE(status.has_value());
                BOOST_TEST(WIFSIGNALED(*status));
                BOOST_TEST((WIFSIGNALED(*status) ? WTERMSIG(*status) : 0) == sig);
                BOOST_TEST(fs::is_empty(data.tmp));
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
