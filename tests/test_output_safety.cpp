// SPDX-License-Identifier: MIT
// What loaderlens writes and what it must never write over: the files beside a recording are never
// made through a symbolic link, --force replaces only regular files, no command writes over one of
// its inputs, and a full disk or a closed pipe is exit 1 with nothing half-written left behind.
// (The loader of `replay` dying with the recorder: test_replay_lifetime.cpp.)
#include "loaderlens/recording.hpp"
#include "precondition.hpp"
#include "small_tmpfs.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

bool mentions(const RunResult& r, const std::string& words) {
    return r.err.find(words) != std::string::npos;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

std::set<std::string> names_in(const fs::path& directory) {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(directory))
        names.insert(entry.path().filename().string());
    return names;
}

mode_t type_of(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

// A 64-record .npy dataset (4 KiB) made by the CLI.
std::string small_dataset(const TempDir& dir) {
    const std::string path = dir.file("small.npy");
    auto made = run({cli_path(), "mkdata", "npy", path, "--count", "64", "--shape", "16"});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    return path;
}

std::string empty_recording(const TempDir& dir, const std::string& name) {
    const std::string path = dir.file(name);
    auto made = run({cli_path(), "record", "-q", "-o", path, "--", "true"});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    return path;
}

// Runs argv with standard output on `stdout_fd` (the test keeps its own copy closed or open).
RunResult run_with_stdout(const std::vector<std::string>& argv, int stdout_fd) {
    TempDir dir;
    const std::string err_path = dir.file("err");
    const pid_t pid = fork();
    if (pid == 0) {
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(stdout_fd, STDOUT_FILENO);
        ::dup2(err, STDERR_FILENO);
        ::signal(SIGPIPE, SIG_DFL); // as a shell starts a command
        std::vector<char*> args;
        for (const auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    RunResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.err = slurp(err_path);
    return result;
}

} // namespace

BOOST_AUTO_TEST_SUITE(output_safety)

// D1: whoever can write the output directory could put a link named like a sidecar there; the
// recorder (maybe root) must neither follow it nor truncate what it points to. A taken sidecar
// name makes the recording's name taken: the next free one is used, --no-clobber refuses, and
// --force refuses a link.
BOOST_AUTO_TEST_CASE(markers_file_never_goes_through_a_link) {
    TempDir dir;
    const std::string victim = dir.file("victim"), out = dir.file("run.db");
    write_text(victim, "victim\n");
    fs::create_symlink(victim, out + ".markers");
    const std::vector<std::string> command{"--", "sh", "-c", "echo e >> \"$LOADERLENS_MARKERS\""};
    auto record = [&](std::vector<std::string> options) {
        std::vector<std::string> argv{cli_path(), "record", "-q", "-o", out};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.insert(argv.end(), command.begin(), command.end());
        return run(argv);
    };

    auto taken = record({});
    BOOST_TEST(taken.exit_code == 0, taken.err);
    BOOST_TEST(slurp(victim) == "victim\n", "the victim was rewritten: " << slurp(victim));
    BOOST_TEST(one_line(taken.err), taken.err);
    BOOST_TEST(mentions(taken, "run.db.markers exists: recording to " + dir.file("run.1.db")));
    BOOST_REQUIRE(fs::exists(dir.file("run.1.db")));
    BOOST_TEST(Recording(dir.file("run.1.db")).markers().size() == 1u);
    BOOST_TEST(!fs::exists(dir.file("run.1.db.markers")));

    auto refused = record({"--no-clobber"});
    BOOST_TEST(refused.exit_code == 2, refused.err);
    BOOST_TEST(one_line(refused.err), refused.err);
    BOOST_TEST(mentions(refused, "run.db.markers"));
    auto forced = record({"--force"});
    BOOST_TEST(forced.exit_code == 2, forced.err);
    BOOST_TEST(one_line(forced.err), forced.err);
    BOOST_TEST(mentions(forced, "run.db.markers: is a symbolic link"));
    BOOST_TEST(slurp(victim) == "victim\n");
    BOOST_TEST(fs::is_symlink(out + ".markers"));
    BOOST_TEST(!fs::exists(out));

    // A command that cannot run leaves neither the recording nor its markers file.
    auto missing = run({cli_path(), "record", "-q", "-o", dir.file("gone.db"), "--", "/no/such"});
    BOOST_TEST(missing.exit_code == 127);
    BOOST_TEST(!fs::exists(dir.file("gone.db")));
    BOOST_TEST(!fs::exists(dir.file("gone.db.markers")));
}

// D1 for replay's loader events file.
BOOST_AUTO_TEST_CASE(loader_events_file_never_goes_through_a_link) {
    TempDir dir;
    const std::string data = small_dataset(dir), victim = dir.file("victim");
    const std::string out = dir.file("run.db");
    write_text(victim, "victim\n");
    fs::create_symlink(victim, out + ".loader");
    auto replay = run({cli_path(), "replay", "-q", "--workers", "0", "-o", out, data});
    BOOST_TEST(replay.exit_code == 0, replay.err);
    BOOST_TEST(slurp(victim) == "victim\n", "the victim was rewritten: " << slurp(victim));
    BOOST_TEST(mentions(replay, "run.db.loader exists: recording to " + dir.file("run.1.db")));
    BOOST_REQUIRE(fs::exists(dir.file("run.1.db")));
    BOOST_TEST(Recording(dir.file("run.1.db")).meta("loader.status") == "ok");
    for (const char* sidecar : {".markers", ".loader"})
        BOOST_TEST(!fs::exists(dir.file("run.1.db") + sidecar), sidecar);
}

// D2: --force replaces a regular file only; a device node, FIFO, directory, socket or symbolic
// link (as the recording or as one of its companions) is refused with nothing removed.
BOOST_AUTO_TEST_CASE(force_replaces_only_regular_files, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to make a device node", InCi::must_have)) return;
    TempDir dir;
    const std::string data = small_dataset(dir);
    BOOST_REQUIRE(::mknod(dir.file("mynull").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    BOOST_REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0644) == 0);
    fs::create_directory(dir.file("directory"));
    write_text(dir.file("target"), "target\n");
    fs::create_symlink(dir.file("target"), dir.file("link"));
    {
        const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        const std::string path = dir.file("sock");
        BOOST_REQUIRE(path.size() < sizeof address.sun_path);
        std::strcpy(address.sun_path, path.c_str());
        BOOST_REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        ::close(sock);
    }
    for (const char* name : {"mynull", "fifo", "directory", "link", "sock"}) {
        const std::string path = dir.file(name);
        const mode_t type = type_of(path);
        auto forced = run({cli_path(), "record", "-q", "-f", "-o", path, "--", "true"});
        BOOST_TEST(forced.exit_code == 2,
                   name << ": exit " << forced.exit_code << " " << forced.err);
        BOOST_TEST(one_line(forced.err), name << ": " << forced.err);
        BOOST_TEST(mentions(forced, path + ": is a"), forced.err);
        BOOST_TEST(type_of(path) == type, name << " was replaced or removed");
    }
    BOOST_TEST(slurp(dir.file("target")) == "target\n");
    auto replayed = run({cli_path(), "replay", "-q", "-f", "-o", dir.file("fifo"), data});
    BOOST_TEST(replayed.exit_code == 2, replayed.err);
    BOOST_TEST(type_of(dir.file("fifo")) == S_IFIFO);

    // A companion the recorder would remove with the recording.
    const std::string old = empty_recording(dir, "old.db"), old_content = slurp(old);
    BOOST_REQUIRE(::mkfifo((old + "-wal").c_str(), 0644) == 0);
    auto companion = run({cli_path(), "record", "-q", "-f", "-o", old, "--", "true"});
    BOOST_TEST(companion.exit_code == 2, companion.err);
    BOOST_TEST(mentions(companion, old + "-wal: is a FIFO"), companion.err);
    BOOST_TEST(type_of(old + "-wal") == S_IFIFO);
    BOOST_TEST(slurp(old) == old_content);

    // A regular file is replaced.
    write_text(dir.file("plain"), "plain\n");
    auto plain = run({cli_path(), "record", "-q", "-f", "-o", dir.file("plain"), "--", "true"});
    BOOST_TEST(plain.exit_code == 0, plain.err);
    BOOST_TEST(Recording(dir.file("plain")).finished());
}

// D3: no command writes over one of its inputs, whichever name reaches it (the same name, a hard
// link, a symbolic link, another spelling, the recording's -wal), through -o or standard output.
BOOST_AUTO_TEST_CASE(no_command_writes_over_its_input) {
    TempDir dir;
    const std::string rec = empty_recording(dir, "run.db"), content = slurp(rec);
    fs::create_hard_link(rec, dir.file("hard.db"));
    fs::create_symlink(rec, dir.file("link.db"));
    fs::create_directory(dir.file("sub"));
    for (const std::string& output :
         {rec, dir.file("hard.db"), dir.file("link.db"), dir.path().string() + "/./run.db",
          dir.file("sub") + "/../run.db", rec + "-wal", rec + "-shm"}) {
        auto exported = run({cli_path(), "export", "--format", "json", "-o", output, rec});
        BOOST_TEST(exported.exit_code == 2, output << ": exit " << exported.exit_code);
        BOOST_TEST(one_line(exported.err), output << ": " << exported.err);
        BOOST_TEST(mentions(exported, "-o " + output), exported.err);
        BOOST_TEST(slurp(rec) == content, output << ": the recording changed");
    }
    BOOST_TEST(!fs::exists(rec + "-wal"));
    for (const char* command : {"export", "report"}) {
        auto appended =
            run({"sh", "-c", "exec " + cli_path() + " " + command + " " + rec + " >> " + rec});
        BOOST_TEST(appended.exit_code == 2, command << ": exit " << appended.exit_code);
        BOOST_TEST(one_line(appended.err), appended.err);
        BOOST_TEST(mentions(appended, "standard output is " + rec), appended.err);
        BOOST_TEST(slurp(rec) == content, command << ": the recording changed");
    }

    // record and replay with --force: the dataset, a --file, the command's executable.
    const std::string data = small_dataset(dir), data_content = slurp(data);
    auto replay = run({cli_path(), "replay", "-q", "-f", "-o", data, "--workers", "0", data});
    BOOST_TEST(replay.exit_code == 2, replay.err);
    BOOST_TEST(one_line(replay.err), replay.err);
    BOOST_TEST(mentions(replay, "input"), replay.err);
    BOOST_TEST(slurp(data) == data_content);
    auto followed =
        run({cli_path(), "record", "-q", "-f", "-o", data, "--file", data, "--", "true"});
    BOOST_TEST(followed.exit_code == 2, followed.err);
    BOOST_TEST(slurp(data) == data_content);
    const std::string script = dir.file("job.sh");
    write_text(script, "#!/bin/sh\ntrue\n");
    fs::permissions(script, fs::perms::owner_all);
    auto itself = run({cli_path(), "record", "-q", "-f", "-o", script, "--", script});
    BOOST_TEST(itself.exit_code == 2, itself.err);
    BOOST_TEST(slurp(script) == "#!/bin/sh\ntrue\n");
}

// D11: `export -o` on a full disk: exit 1 with the reason; no partial file, and an old file of
// that name stays as it was (the export goes to a temporary file renamed into place).
BOOST_AUTO_TEST_CASE(export_on_a_full_disk_leaves_nothing_half_written, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    const std::string rec = empty_recording(dir, "run.db");
    SmallTmpfs full(dir, 512);
    if (!precondition(full.mounted(), "cannot mount a tmpfs: " + full.error(), InCi::must_have))
        return;
    write_text(full.file("out.csv"), "old\n");
    full.fill_up();
    const auto before = names_in(full.path());
    for (const char* name : {"out.csv", "new.csv"}) {
        auto exported = run({cli_path(), "export", "-o", full.file(name), rec});
        BOOST_TEST(exported.exit_code == 1, name << ": exit " << exported.exit_code);
        BOOST_TEST(one_line(exported.err), exported.err);
        BOOST_TEST(mentions(exported, full.file(name) + ": cannot write: No space left"),
                   exported.err);
        BOOST_TEST((names_in(full.path()) == before), name << ": a file was left behind");
    }
    BOOST_TEST(slurp(full.file("out.csv")) == "old\n", "the old file was truncated");
}

// D11: mkdata on a full disk: the output could not be written (1), not bad input (2).
BOOST_AUTO_TEST_CASE(mkdata_on_a_full_disk_is_exit_1, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    SmallTmpfs full(dir, 512);
    if (!precondition(full.mounted(), "cannot mount a tmpfs: " + full.error(), InCi::must_have))
        return;
    // npy: records that fill the disk exactly, its header does not fit: the write fails. LMDB:
    // 400 KiB of values, more with LMDB's pages: the commit fails. raw: refused before writing
    // (the records alone need more than the 512 KiB free).
    const std::vector<std::vector<std::string>> datasets{
        {"npy", full.file("data.npy"), "--size", "512KiB", "--shape", "16"},
        {"lmdb", full.file("data.lmdb"), "--count", "400", "--value-size", "1024"},
        {"raw", full.file("data.raw"), "--size", "4MiB", "--record-size", "4096"}};
    for (const auto& arguments : datasets) {
        std::vector<std::string> argv{cli_path(), "mkdata"};
        argv.insert(argv.end(), arguments.begin(), arguments.end());
        auto made = run(argv);
        BOOST_TEST(made.exit_code == 1,
                   arguments[0] << ": exit " << made.exit_code << " " << made.err);
        BOOST_TEST(one_line(made.err), made.err);
        BOOST_TEST(mentions(made, arguments[1]), made.err);
        BOOST_TEST(names_in(full.path()).empty(), arguments[0] << ": left something behind");
    }
}

// D11: `replay` on a full disk: the recording stops (one line saying so), the report of what was
// recorded is still printed, and the run fails (1) though the loader succeeded.
BOOST_AUTO_TEST_CASE(replay_on_a_full_disk_fails_with_its_report, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    const std::string data = small_dataset(dir);
    SmallTmpfs full(dir, 512);
    if (!precondition(full.mounted(), "cannot mount a tmpfs: " + full.error(), InCi::must_have))
        return;
    // ~4 s of loading (100 epochs of 2 batches of 20 ms); 512 KiB hold ~2.5 s of this recording.
    const std::string out = full.file("r.db");
    auto replay = run({cli_path(), "replay", "--workers", "2", "--epochs", "100", "--step-time",
                       "20ms", "-o", out, data});
    BOOST_TEST(replay.exit_code == 1, "exit " << replay.exit_code << ": " << replay.err);
    BOOST_TEST(one_line(replay.err), replay.err);
    BOOST_TEST(mentions(replay, out + ": recording stopped"), replay.err);
    BOOST_TEST(mentions(replay, "full"), replay.err);
    BOOST_TEST(replay.out.find("loaderlens report: " + out) != std::string::npos,
               "no report: " << replay.out);
    for (const char* sidecar : {".markers", ".loader"})
        BOOST_TEST(!fs::exists(out + sidecar), sidecar);
}

// Exit 1 is for a write that failed (no space, an I/O error), told by the error's code: a name that
// merely holds such a message ("No space left on device", SQLite's "database or disk is full") in
// a directory that does not exist is bad input (2). Until the codes were passed on, the CLI read
// the message's text and took the name's words for the disk's.
BOOST_AUTO_TEST_CASE(a_name_that_reads_like_a_full_disk_is_still_bad_input) {
    TempDir dir;
    const std::string data = small_dataset(dir);
    for (const std::string words :
         {"No space left on device", "database or disk is full", "disk I/O error"}) {
        const std::string missing = dir.file(words) + "/";
        for (const auto& argv : {
                 std::vector<std::string>{cli_path(), "record", "-q", "-o", missing + "r.db", "--",
                                          "true"},
                 std::vector<std::string>{cli_path(), "replay", "-q", "-o", missing + "r.db", data},
                 std::vector<std::string>{cli_path(), "mkdata", "npy", missing + "d.npy", "--count",
                                          "2"},
                 std::vector<std::string>{cli_path(), "mkdata", "lmdb", missing + "d", "--count",
                                          "2"},
             }) {
            auto result = run(argv);
            BOOST_TEST(result.exit_code == 2, argv[1] << " in '" << words << "': exit "
                                                      << result.exit_code << ": " << result.err);
            BOOST_TEST(one_line(result.err), result.err);
        }
    }
}

// No room for even an empty recording: the output could not be written (1), one line, nothing left.
BOOST_AUTO_TEST_CASE(no_room_for_a_recording_is_exit_1, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount a small tmpfs", InCi::must_have)) return;
    TempDir dir;
    const std::string data = small_dataset(dir);
    SmallTmpfs full(dir, 512);
    if (!precondition(full.mounted(), "cannot mount a tmpfs: " + full.error(), InCi::must_have))
        return;
    full.fill_up();
    const std::string out = full.file("r.db");
    for (const auto& argv :
         {std::vector<std::string>{cli_path(), "record", "-q", "-o", out, "--", "true"},
          std::vector<std::string>{cli_path(), "replay", "-q", "-o", out, data}}) {
        auto result = run(argv);
        BOOST_TEST(result.exit_code == 1, argv[1] << ": exit " << result.exit_code);
        BOOST_TEST(one_line(result.err), result.err);
        BOOST_TEST(mentions(result, out), result.err);
        BOOST_TEST((names_in(full.path()) == std::set<std::string>{"filler"}), argv[1]);
    }
}

// A closed pipe (`export ... | head -1`) is a failed write, exit 1 with one line, not a
// death by SIGPIPE; a full disk on standard output, or an -o FIFO nobody reads, is exit 1 with one
// line saying so.
BOOST_AUTO_TEST_CASE(closed_pipe_full_stdout_and_unread_fifo_are_exit_1) {
    TempDir dir;
    const std::string rec = empty_recording(dir, "run.db");
    for (const char* command : {"export", "report"}) {
        int pipe_fds[2];
        BOOST_REQUIRE(::pipe(pipe_fds) == 0);
        ::close(pipe_fds[0]); // the reader is gone before the first write
        auto piped = run_with_stdout({cli_path(), command, rec}, pipe_fds[1]);
        ::close(pipe_fds[1]);
        BOOST_TEST(piped.exit_code == 1, command << ": exit " << piped.exit_code);
        BOOST_TEST(one_line(piped.err), piped.err);
        BOOST_TEST(mentions(piped, "standard output: cannot write: Broken pipe"), piped.err);

        const int full = ::open("/dev/full", O_WRONLY);
        BOOST_REQUIRE(full >= 0);
        auto on_full = run_with_stdout({cli_path(), command, rec}, full);
        ::close(full);
        BOOST_TEST(on_full.exit_code == 1, command << ": exit " << on_full.exit_code);
        BOOST_TEST(one_line(on_full.err), on_full.err);
        BOOST_TEST(mentions(on_full, "standard output: cannot write: No space left"), on_full.err);
    }
    // A FIFO nobody reads: refused at once rather than waited on forever.
    BOOST_REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0644) == 0);
    auto unread = run({cli_path(), "export", "-o", dir.file("fifo"), rec}, std::chrono::seconds(5));
    BOOST_TEST(unread.exit_code == 1, "exit " << unread.exit_code << ": " << unread.err);
    BOOST_TEST(one_line(unread.err), unread.err);
    BOOST_TEST(mentions(unread, dir.file("fifo") + ": a FIFO that nobody reads"), unread.err);
    auto to_device = run({cli_path(), "export", "-o", "/dev/full", rec});
    BOOST_TEST(to_device.exit_code == 1, to_device.err);
    BOOST_TEST(one_line(to_device.err), to_device.err);
    BOOST_TEST(type_of("/dev/full") == S_IFCHR);
}

BOOST_AUTO_TEST_SUITE_END()
