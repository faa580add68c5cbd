// SPDX-License-Identifier: MIT
// A marker asks for a sample of every tier at once, and the reference loader lets its workers
// exit only once the recorder has taken it (LOADERLENS_SAMPLED): a re-forked replay records each
// worker's per-file figures at each epoch's end. The oracle is this test's own reading of
// /proc/PID/smaps, made when it sees the "epoch E end" line appear in the markers file, with the
// workers stopped (SIGSTOP) while it reads so that none exits under it.
#include "loaderlens/recording.hpp"
#include "replay_support.hpp"
#include "residency_support.hpp"
#include "smaps_oracle.hpp"

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
namespace tt = boost::test_tools;

namespace {

std::optional<std::string> read_whole(const std::string& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

pid_t parent_of(pid_t pid) {
    auto stat = read_whole("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return 0;
    const auto close = stat->rfind(')');
    std::istringstream rest(stat->substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    return ppid;
}

// The processes whose parent is `parent`.
std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const pid_t pid = std::stoi(name);
        if (parent_of(pid) == parent) out.push_back(pid);
    }
    return out;
}

// Watches the markers file. At "epoch E start" it notes the loader's main (the recorder's child)
// and its workers (the main's children, forked before the start marker); at "epoch E end" it
// stops the main at once (SIGSTOP: it cannot end its workers then; the recorder does not watch
// for stops), then the workers, reads their smaps, and lets them all go on. A main that had
// already ended its workers (the recorder answered first) leaves that epoch without figures.
class EpochEndOracle {
  public:
    EpochEndOracle(std::string markers, std::uint64_t inode, pid_t recorder)
        : markers_(std::move(markers)), inode_(inode), recorder_(recorder),
          thread_([this] { watch(); }) {}
    ~EpochEndOracle() {
        stop_ = true;
        thread_.join();
    }
    // epoch -> pid -> figures
    std::map<int, std::map<pid_t, SmapsOfFile>> seen() {
        std::lock_guard lock(mutex_);
        return seen_;
    }

  private:
    void watch() {
        std::size_t done = 0;
        while (!stop_) {
            auto text = read_whole(markers_).value_or("");
            std::size_t eol;
            while ((eol = text.find('\n', done)) != std::string::npos) {
                const std::string line = text.substr(done, eol - done);
                done = eol + 1;
                const auto at = line.find(" epoch ");
                if (at == std::string::npos) continue;
                if (line.ends_with(" start")) note_workers();
                if (line.ends_with(" end")) read_workers(std::stoi(line.substr(at + 7)));
            }
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
    }
    void note_workers() {
        const std::vector<pid_t> mains = children_of(recorder_);
        main_ = mains.size() == 1 ? mains.front() : 0;
        workers_ = main_ ? children_of(main_) : std::vector<pid_t>{};
    }
    void read_workers(int epoch) {
        if (main_) ::kill(main_, SIGSTOP);
        for (pid_t pid : workers_)
            ::kill(pid, SIGSTOP);
        std::map<pid_t, SmapsOfFile> figures;
        for (pid_t pid : workers_)
            if (auto f = smaps_of_file(pid, inode_); f && f->mappings > 0) figures[pid] = *f;
        for (pid_t pid : workers_)
            ::kill(pid, SIGCONT);
        if (main_) ::kill(main_, SIGCONT);
        std::lock_guard lock(mutex_);
        seen_[epoch] = std::move(figures);
    }

    std::string markers_;
    std::uint64_t inode_;
    pid_t recorder_, main_ = 0;
    std::vector<pid_t> workers_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::map<int, std::map<pid_t, SmapsOfFile>> seen_;
    std::thread thread_;
};

// The first row at or after `t` for (process, data file): maps tier, and residency tier.
const MapRow* first_after(const std::vector<MapRow>& rows, std::int64_t t, std::int64_t process,
                          std::int64_t object) {
    for (const auto& row : rows)
        if (row.t_ms >= t && row.process_id == process && row.object_id == object) return &row;
    return nullptr;
}
const Timed<MappedResidency>* first_after(const std::vector<Timed<MappedResidency>>& rows,
                                          std::int64_t t, std::int64_t process) {
    for (const auto& row : rows)
        if (row.t_ms >= t && row.sample.process_id == process) return &row;
    return nullptr;
}

void check_within(std::int64_t recorded, std::int64_t oracle, double share, const char* what) {
    BOOST_TEST(std::abs(static_cast<double>(recorded - oracle)) <=
                   share * static_cast<double>(oracle) + 8.0,
               what << ": recorded " << recorded << " KiB, smaps at the marker " << oracle
                    << " KiB");
}

} // namespace

BOOST_AUTO_TEST_SUITE(epoch_end_samples)

BOOST_AUTO_TEST_CASE(a_reforked_replay_records_per_file_figures_at_each_epoch_end) {
    TempDir dir;
    const std::string data = dir.file("images.npy");
    mkdata({"npy", data, "--count", "4096", "--shape", "2048", "--dtype", "f4"}); // 32 MiB
    struct stat st {};
    BOOST_REQUIRE(::stat(data.c_str(), &st) == 0);
    const std::string db = dir.file("run.db");
    // Regular deep samples every 5 s: a deep sample within 300 ms of each epoch's end can only
    // be one the marker asked for. A budget of half a core keeps the maps tier's account out of
    // debt, so that its smaps sweep joins every marker's sample (it is left out when in debt).
    Child replay({cli_path(),
                  "replay",
                  "-q",
                  "-o",
                  db,
                  data,
                  "--workers",
                  "2",
                  "--epochs",
                  "3",
                  "--step-time",
                  "2ms",
                  "--interval",
                  "rollup=5s",
                  "--interval",
                  "maps=5s",
                  "--interval",
                  "residency=5s",
                  "--cpu-budget",
                  "50%"});
    std::map<int, std::map<pid_t, SmapsOfFile>> oracle;
    {
        EpochEndOracle watcher(db + ".markers", st.st_ino, replay.pid());
        const auto status = replay.wait(std::chrono::seconds(120));
        BOOST_REQUIRE_MESSAGE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0,
                              "replay failed: " << replay.output());
        oracle = watcher.seen();
    }
    BOOST_REQUIRE_EQUAL(oracle.size(), 3u); // three epoch ends seen

    Recording recording(db);
    const RecordingData all = recording.read_all();
    const std::int64_t object = object_id_of(recording, "images.npy");
    BOOST_REQUIRE(object >= 0);
    const std::int64_t page_kb = residency::page_size() / 1024;
    int compared = 0;
    for (const auto& [epoch, workers] : oracle) {
        const std::int64_t end = marker_time(recording, "epoch " + std::to_string(epoch) + " end");
        BOOST_TEST_CONTEXT("epoch " << epoch) {
            BOOST_TEST_MESSAGE("epoch " << epoch << ": the oracle read " << workers.size()
                                        << " workers");
            for (const auto& [pid, figures] : workers) {
                const auto process = std::find_if(
                    all.processes.begin(), all.processes.end(), [&](const ProcessInfo& p) {
                        return p.key.pid == pid && p.generation == epoch;
                    });
                BOOST_REQUIRE(process != all.processes.end());
                const std::int64_t id = process->id;
                const MapRow* maps = first_after(all.maps, end, id, object);
                BOOST_REQUIRE_MESSAGE(maps, "no per-file sample after the marker");
                BOOST_TEST(maps->t_ms - end <= 300);
                check_within(maps->figures.rss_kb, figures.rss_kb, 0.02, "smaps RSS");
                const auto* mapped = first_after(all.mapped_residency, end, id);
                BOOST_REQUIRE_MESSAGE(mapped, "no residency sample after the marker");
                BOOST_TEST(mapped->t_ms - end <= 300);
                check_within(mapped->sample.present_pages * page_kb, figures.rss_kb, 0.02,
                             "computed RSS");
                ++compared;
            }
        }
    }
    // Both workers of at least two of the three epochs: on a loaded machine the recorder (and
    // with it the loader) can now and then answer before this test's oracle has stopped them.
    BOOST_TEST(compared >= 4);
}

BOOST_AUTO_TEST_SUITE_END()
