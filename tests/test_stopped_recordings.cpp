// SPDX-License-Identifier: MIT
// Recordings that stopped early, as the reader reports them: a recorder stopped by a full disk
// (a 512 KiB tmpfs), and a killed recording copied with its -wal but not its -shm into a
// read-only directory, read by another user.
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sys/mount.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A tmpfs of `size` mounted on a new directory `path`; unmounted (lazily, so that a file left open
// cannot keep it) when the object goes.
class SmallDisk {
  public:
    SmallDisk(const std::string& path, const std::string& size) : path_(path) {
        fs::create_directories(path);
        const auto r = run({"mount", "-t", "tmpfs", "-o", "size=" + size, "loaderlens-test", path});
        BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    }
    ~SmallDisk() { ::umount2(path_.c_str(), MNT_DETACH); }
    SmallDisk(const SmallDisk&) = delete;
    SmallDisk& operator=(const SmallDisk&) = delete;

  private:
    std::string path_;
};

json report_json(const std::string& file, const std::vector<std::string>& as = {}) {
    std::vector<std::string> argv = as;
    argv.insert(argv.end(), {cli_path(), "report", "--json", file});
    const auto r = run(argv, 10s);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

// A recording whose recorder was killed (SIGKILL) after about two seconds: its data is in
// FILE-wal.
std::string killed_recording(const TempDir& dir) {
    const std::string out = dir.file("killed.db");
    {
        Child recorder({cli_path(), "record", "-q", "-o", out, "--", "sh", "-c",
                        "sleep 30 & sleep 30 & wait"});
        std::this_thread::sleep_for(2500ms);
        kill(recorder.pid(), SIGKILL);
        BOOST_REQUIRE(recorder.wait(5s));
    } // the command and its children (the recorder's process group) killed here
    BOOST_REQUIRE(fs::exists(out + "-wal"));
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(stopped_recordings)

// D11, reader side: a recording whose recorder stopped when its disk filled up read "finished,
// 0.0 s recorded" (later: "cut", with no cause), main "[running]" though it held seconds.
BOOST_AUTO_TEST_CASE(a_recording_stopped_by_a_full_disk_says_so, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    const std::string disk = dir.file("disk"), out = disk + "/run.db";
    SmallDisk small(disk, "512k");
    // The command fills the disk after a second and a half of recording, then goes on a while.
    const auto recorded =
        run({cli_path(), "record", "-q", "-o", out, "--", "sh", "-c",
             "sleep 1.5; cat /dev/zero > \"$0/filler\" 2>/dev/null; sleep 1.5", disk},
            30s);
    BOOST_TEST(recorded.err.find("recording stopped, the command goes on") != std::string::npos,
               recorded.err);

    const auto text = run({cli_path(), "report", out}, 10s);
    BOOST_REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    const auto lines = lines_of(text.out);
    BOOST_REQUIRE(lines.size() > 4u);
    BOOST_TEST(lines[1].starts_with("Recording cut: the recorder stopped without finishing; last "
                                    "sample at "),
               lines[1]);
    BOOST_TEST(lines[1].ends_with("; the file system holding it is full now: a write that failed "
                                  "for lack of space stops the recorder"),
               lines[1]);
    BOOST_TEST(text.out.find("NOT FINISHED (cut") != std::string::npos);
    BOOST_TEST(text.out.find(" 0.0 s recorded") == std::string::npos);
    BOOST_TEST(text.out.find("[running") == std::string::npos, text.out);
    int main_lines = 0;
    for (const auto& line : lines)
        if (line.find(" main ") != std::string::npos && line.find("-cut ") != std::string::npos) {
            ++main_lines;
            BOOST_TEST(line.find(" sh [last seen at ") != std::string::npos, line);
            BOOST_TEST(line.ends_with(" s, then cut]"), line);
        }
    BOOST_TEST(main_lines == 1);

    const json report = report_json(out);
    BOOST_TEST(report["finished"] == false);
    const std::int64_t last = report["cut"]["last_sample_ms"].get<std::int64_t>();
    BOOST_TEST(last >= 1000);
    BOOST_TEST(report["duration_ms"] == last);
    const json& main = report["processes"][0];
    BOOST_TEST(main["role"] == "main");
    BOOST_TEST(main["end"] == "cut");
    BOOST_TEST(main["last_seen_ms"].get<std::int64_t>() >= 1000);
    BOOST_TEST(main["last_seen_ms"].get<std::int64_t>() <= last);
}

// D14: a killed recording (SIGKILL: its data in FILE-wal) copied with its -wal but without its -shm
// into a directory the reader may not write to, read as another user: everything there, nothing
// created beside it.
BOOST_AUTO_TEST_CASE(a_killed_recording_copied_without_its_shm_reads_as_another_user,
                     *LOADERLENS_MAY_SKIP) {
    if (!precondition(getuid() == 0, "needs root to read as another user (nobody)",
                      InCi::must_have) ||
        !precondition(fs::exists("/usr/bin/setpriv"), "needs setpriv (util-linux)",
                      InCi::must_have))
        return;
    TempDir dir;
    fs::permissions(dir.path(), fs::perms(0755));
    const std::string out = killed_recording(dir);

    const fs::path shelf = dir.path() / "shelf";
    fs::create_directory(shelf);
    const std::string copy = (shelf / "killed.db").string();
    fs::copy_file(out, copy);
    fs::copy_file(out + "-wal", copy + "-wal");
    fs::permissions(copy, fs::perms(0444));
    fs::permissions(copy + "-wal", fs::perms(0444));
    fs::permissions(shelf, fs::perms(0555));
    const std::vector<std::string> nobody{"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup",
                                          "--clear-groups"};
    const json as_root = report_json(out);
    const json report = report_json(copy, nobody);
    BOOST_TEST(report["cut"]["last_sample_ms"] == as_root["cut"]["last_sample_ms"]);
    BOOST_TEST(report["cut"]["last_sample_ms"].get<std::int64_t>() >= 1500);
    BOOST_TEST(report["processes"].size() == as_root["processes"].size());
    BOOST_TEST(report["processes"].size() >= 3u);
    for (const std::string format : {"csv", "json", "residency-csv"}) {
        std::vector<std::string> argv = nobody;
        argv.insert(argv.end(), {cli_path(), "export", "--format", format, copy});
        const auto exported = run(argv, 10s);
        BOOST_TEST(exported.exit_code == 0, format << ": " << exported.err);
    }
    BOOST_TEST(!fs::exists(copy + "-shm"));

    // A -wal the reader may not read holds the newest data: said so, not "unable to open".
    fs::permissions(copy + "-wal", fs::perms(0400));
    std::vector<std::string> argv = nobody;
    argv.insert(argv.end(), {cli_path(), "report", copy});
    const auto refused = run(argv, 10s);
    BOOST_TEST(refused.exit_code == 2);
    BOOST_TEST(refused.err ==
               "loaderlens: " + copy +
                   "-wal: Permission denied (the recording's newest data is in it)\n");
    fs::permissions(copy, fs::perms(0400));
    const auto unreadable = run(argv, 10s);
    BOOST_TEST(unreadable.exit_code == 2);
    BOOST_TEST(unreadable.err == "loaderlens: " + copy + ": Permission denied\n");
    fs::permissions(shelf, fs::perms(0755)); // so that TempDir can go
}

// A killed recording copied with an empty -wal (not its own): its data is lost, and the reader says
// where it was rather than "not a loaderlens recording".
BOOST_AUTO_TEST_CASE(a_killed_recording_with_an_empty_wal_says_where_its_data_was) {
    TempDir dir;
    const std::string out = killed_recording(dir);
    const std::string copy = dir.file("copy.db");
    fs::copy_file(out, copy);
    std::ofstream(copy + "-wal").close();
    const auto r = run({cli_path(), "report", copy}, 10s);
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.err == "loaderlens: " + copy + ": the recording's data is in " + copy +
                            "-wal, which is empty: copy copy.db-wal (and copy.db-shm) along with "
                            "copy.db\n");
}

// A -wal with no usable frame (cut after its header, or mid-frame) copied without its -shm: the
// reader's connection, the last one on close, checkpointed nothing and deleted the -wal.
BOOST_AUTO_TEST_CASE(a_reader_leaves_a_damaged_wal_as_it_is) {
    TempDir dir;
    const std::string out = killed_recording(dir);
    int n = 0;
    for (const std::uintmax_t size : {std::uintmax_t{32}, std::uintmax_t{32 + 24 + 100}}) {
        BOOST_TEST_CONTEXT("-wal cut to " << size << " bytes") {
            const std::string copy = dir.file("copy" + std::to_string(n++) + ".db");
            fs::copy_file(out, copy);
            fs::copy_file(out + "-wal", copy + "-wal");
            fs::resize_file(copy + "-wal", size);
            for (const std::vector<std::string>& reader :
                 {std::vector<std::string>{"report"}, {"report", "--json"}, {"export"}}) {
                std::vector<std::string> argv{cli_path()};
                argv.insert(argv.end(), reader.begin(), reader.end());
                argv.push_back(copy);
                const auto r = run(argv, 10s);
                BOOST_TEST(r.exit_code == 2);
                BOOST_TEST(r.err == "loaderlens: " + copy + ": the recording's data is in " + copy +
                                        "-wal, which is damaged or truncated: SQLite finds no "
                                        "complete transaction in it\n");
                BOOST_TEST(fs::exists(copy + "-wal"));
                BOOST_TEST(fs::file_size(copy + "-wal") == size);
                BOOST_TEST(!fs::exists(copy + "-shm"));
            }
        }
    }
}

// The names and contents of the files in `dir`.
std::map<std::string, std::string> files_in(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        out[entry.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return out;
}

// A reader writes nothing beside a copy: SQLite created FILE-wal (O_CREAT, even read-only) for a
// WAL-mode file copied alone, and FILE-shm beside a -wal once the header no longer said WAL.
BOOST_AUTO_TEST_CASE(a_reader_creates_nothing_beside_a_copy) {
    TempDir dir;
    const std::string out = killed_recording(dir);
    auto copy_into = [&](const std::string& name, bool with_wal) {
        const fs::path shelf = dir.path() / name;
        fs::create_directory(shelf);
        fs::copy_file(out, shelf / "killed.db");
        if (with_wal) fs::copy_file(out + "-wal", shelf / "killed.db-wal");
        return shelf;
    };
    const fs::path alone = copy_into("alone", false), rollback = copy_into("rollback", true);
    {
        std::fstream header((rollback / "killed.db").string(),
                            std::ios::in | std::ios::out | std::ios::binary);
        header.seekp(18);
        header.write("\1\1", 2); // file format versions of rollback mode
    }
    for (const fs::path& shelf : {alone, rollback}) {
        BOOST_TEST_CONTEXT(shelf.filename()) {
            const auto before = files_in(shelf);
            for (const std::vector<std::string>& reader :
                 {std::vector<std::string>{"report"}, {"report", "--json"}, {"export"}}) {
                std::vector<std::string> argv{cli_path()};
                argv.insert(argv.end(), reader.begin(), reader.end());
                argv.push_back((shelf / "killed.db").string());
                const auto r = run(argv, 10s);
                // Copied alone: its data is lost (exit 2). Header flipped to rollback mode: SQLite
                // reads a -wal it finds all the same (exit 0).
                BOOST_TEST(r.exit_code == (shelf == alone ? 2 : 0), r.err);
                BOOST_TEST(lines_of(r.err).size() == (shelf == alone ? 1u : 0u), r.err);
                BOOST_TEST((files_in(shelf) == before));
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
