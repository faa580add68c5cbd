// SPDX-License-Identifier: MIT
// N12 (issue 27): a recording deleted, renamed away or replaced while it is written. The recorder
// wrote on into a file nobody could find, exited 0 and said nothing; `tail` said "cut" and 0.
// Real `loaderlens record -- CMD` runs: the command itself moves the recording once the recorder
// has acknowledged a sample of its marker (LOADERLENS_SAMPLED), waits until the recorder has
// removed or emptied its -wal (what it does on noticing), and exits with a status of its own.
#include "precondition.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>

using namespace loaderlens::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const std::string python = "/usr/bin/python3";

// Python: writes a marker and waits until the recorder has acknowledged a sample of it
// ($LOADERLENS_SAMPLED): from then on the recording has rows.
const std::string marked_and_sampled = R"(
import os, shutil, sys, time
asked = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
open(os.environ["LOADERLENS_MARKERS"], "a").write("before\n")
while True:
    try:
        a, b = open(os.environ["LOADERLENS_SAMPLED"]).read().split()
        if a == b and int(a) >= asked: break
    except (OSError, ValueError):
        pass
    time.sleep(0.005)
)";

// argv[1]: the recording; argv[2]: what to do to it; argv[3]: a file of the recorder's that it
// removes or empties once it noticed (its -wal, or its -shm). Exits 7 then, 99 if that does not
// come within 20 s. "and-exit" after them: exits 7 at once.
const std::string mover = marked_and_sampled + R"(
path, action, wal = sys.argv[1:4]
if action == "delete":
    os.unlink(path)
elif action == "replace":
    open(path + ".new", "w").write("someone else's file\n")
    os.rename(path + ".new", path)
elif action == "rename":
    os.rename(path, path + ".moved")
elif action == "wal":
    os.unlink(path + "-wal")
elif action == "directory":
    d = os.path.dirname(path)
    os.rename(d, d + ".moved")
    os.mkdir(d)
if sys.argv[4:] == ["and-exit"]:
    sys.exit(7)
deadline = time.monotonic() + 20
while os.path.exists(wal) and os.path.getsize(wal) > 0:
    if time.monotonic() > deadline: sys.exit(99)
    time.sleep(0.01)
sys.exit(7)
)";

RunResult record_and(const std::string& out, const std::string& action, const std::string& wal,
                     bool exit_at_once = false) {
    std::vector<std::string> argv{cli_path(), "record", "-o", out,    "--", python,
                                  "-c",       mover,    out,  action, wal};
    if (exit_at_once) argv.push_back("and-exit");
    return run(argv, 60s);
}

// The recorder's one line about it, naming the recording, and no claim that it was written.
void says_once(const RunResult& r, const std::string& out, const std::string& what) {
    BOOST_TEST_MESSAGE(r.err);
    BOOST_TEST(r.exit_code == 7); // the command's own status, untouched
    const auto lines = lines_of(r.err);
    BOOST_TEST(lines.size() == 1u);
    BOOST_TEST(r.err.find(out + ": ") != std::string::npos);
    BOOST_TEST(r.err.find(what) != std::string::npos);
    BOOST_TEST(r.err.find("recording written to") == std::string::npos);
}

std::string text_of(const std::string& file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

bool names_left(const fs::path& dir, const std::vector<std::string>& expected) {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir))
        found.push_back(entry.path().filename().string());
    std::sort(found.begin(), found.end());
    BOOST_TEST_MESSAGE("left in " << dir << ": " << found.size() << " names");
    return found == expected;
}

// A finished recording readable whole: no warning that its -wal is missing.
void reads_clean(const std::string& file) {
    const auto r = run({cli_path(), "report", file}, 20s);
    BOOST_TEST(r.exit_code == 0);
    BOOST_TEST(r.err.find("-wal is missing") == std::string::npos);
    BOOST_TEST(r.out.find("cut") != std::string::npos); // it stopped before the command ended
}

// A recording being written, with a sample of a marker in it, until `go` exists.
const std::string waiter = marked_and_sampled + R"(
ready, go = sys.argv[1:3]
open(ready, "w").close()
deadline = time.monotonic() + 30
while not os.path.exists(go) and time.monotonic() < deadline: time.sleep(0.01)
)";

bool appears(const std::string& file, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!fs::exists(file)) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(10ms); // polls for the file, does not wait for it to happen
    }
    return true;
}

// `tail` follows a recording being written; `change` is done to it once tail printed its
// first line. Returns what tail printed (stdout and stderr) and its wait status.
std::pair<std::string, int> tail_while(const std::string& change) {
    TempDir dir;
    const std::string out = dir.file("run.db"), ready = dir.file("ready"), go = dir.file("go");
    Child recorder({cli_path(), "record", "-q", "-o", out, "--", python, "-c", waiter, ready, go});
    BOOST_REQUIRE(appears(ready, 30s));
    Child tail({"sh", "-c", "exec \"$0\" tail --from-start --interval 100ms \"$1\" 2>&1",
                cli_path(), out});
    BOOST_REQUIRE(tail.wait_for_line("", 10s)); // it has the recording open and read it
    if (change == "delete") {
        fs::remove(out);
    } else {
        std::ofstream(out + ".new") << "someone else's file\n";
        fs::rename(out + ".new", out);
    }
    tail.wait_for_line("loaderlens: ", 10s); // its last line, if it says something
    const auto status = tail.wait(10s);
    std::ofstream(go).close();
    recorder.wait(10s);
    BOOST_REQUIRE_MESSAGE(status, "tail goes on following: " + tail.output());
    BOOST_TEST_MESSAGE("tail's wait status: " << *status);
    return {tail.output(), *status};
}

} // namespace

BOOST_AUTO_TEST_SUITE(recording_moved)

BOOST_AUTO_TEST_CASE(deleted_while_written, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    const std::string out = dir.file("run.db");
    says_once(record_and(out, "delete", out + "-wal"), out, "deleted while it was being written");
    BOOST_TEST(names_left(dir.path(), {})); // no -wal or -shm left to meet a new run.db
}

BOOST_AUTO_TEST_CASE(another_file_renamed_over_it, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    const std::string out = dir.file("run.db");
    says_once(record_and(out, "replace", out + "-wal"), out, "another file was put in its place");
    // That file is as it was put there, and no WAL of ours is left to be applied to it.
    BOOST_TEST(text_of(out) == "someone else's file\n");
    BOOST_TEST(names_left(dir.path(), {"run.db"}));
}

BOOST_AUTO_TEST_CASE(renamed_away_while_written, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    const std::string out = dir.file("run.db");
    says_once(record_and(out, "rename", out + "-wal"), out, "renamed or moved away");
    // What was committed is in the file under its new name, without a -wal.
    BOOST_TEST(names_left(dir.path(), {"run.db.moved"}));
    reads_clean(out + ".moved");
}

BOOST_AUTO_TEST_CASE(a_directory_of_its_path_replaced, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    fs::create_directory(dir.file("out"));
    const std::string out = dir.file("out/run.db");
    // The -wal moved with the directory: emptied into the file when the recorder noticed.
    says_once(record_and(out, "directory", dir.file("out.moved/run.db-wal")), out,
              "a directory on its path was renamed or replaced");
    BOOST_TEST(names_left(dir.file("out"), {}));
    reads_clean(dir.file("out.moved/run.db"));
}

// Its -wal deleted (rm run.db-wal): the recorder would write on into a WAL nobody can read.
BOOST_AUTO_TEST_CASE(its_wal_deleted_while_written, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    const std::string out = dir.file("run.db");
    // Waits for its -shm to go: what the recorder removes once it noticed.
    says_once(record_and(out, "wal", out + "-shm"), out, "its -wal file was deleted or replaced");
    // What was committed is in the file itself, which says rollback mode: no -wal looked for.
    BOOST_TEST(names_left(dir.path(), {"run.db"}));
    reads_clean(out);
}

BOOST_AUTO_TEST_CASE(tail_of_a_deleted_or_replaced_recording, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    for (const auto& [how, said] :
         {std::pair<std::string, std::string>{"delete", "deleted or renamed away"},
          {"replace", "replaced by another file"}}) {
        BOOST_TEST_CONTEXT(how) {
            const auto [printed, status] = tail_while(how);
            BOOST_TEST_MESSAGE(printed);
            BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 2));
            BOOST_TEST(printed.find("run.db: " + said + " while it was followed") !=
                       std::string::npos);
            BOOST_TEST(printed.find("cut") == std::string::npos);
        }
    }
}

// The command ends right after deleting the recording: the recorder notices at the latest when
// it would finish it, and does not claim to have written it.
BOOST_AUTO_TEST_CASE(deleted_just_before_the_end, *LOADERLENS_MAY_SKIP) {
    if (!precondition(fs::exists(python), "no " + python, InCi::must_have)) return;
    TempDir dir;
    const std::string out = dir.file("run.db");
    says_once(record_and(out, "delete", out + "-wal", true), out, "deleted while it was");
    BOOST_TEST(names_left(dir.path(), {}));
}

BOOST_AUTO_TEST_SUITE_END()
