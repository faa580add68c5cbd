// SPDX-License-Identifier: MIT
// `loaderlens record` records as loaderlens-record (cli/lean_recorder.hpp): the recorder, which
// the job's scheduler counts, maps no library that only the other commands call. The oracle is
// the kernel's view of the recorder's process (/proc/PID/maps, exe, comm) while it records.
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// Marks, waits for its sample (every tier has run by then), and stays.
const std::string waits_for_its_sample =
    "echo m >> \"$LOADERLENS_MARKERS\"; "
    "until [ -s \"$LOADERLENS_SAMPLED\" ]; do sleep 0.01; done; echo sampled; exec sleep 60";

} // namespace

BOOST_AUTO_TEST_SUITE(lean_recorder)

BOOST_AUTO_TEST_CASE(the_recorder_maps_only_what_recording_calls) {
    TempDir dir;
    Child recorder({cli_path(), "record", "-q", "-o", dir.file("r.db"), "--", "sh", "-c",
                    waits_for_its_sample});
    BOOST_REQUIRE(recorder.wait_for_line("sampled", 30s));
    const std::string proc = "/proc/" + std::to_string(recorder.pid());
    // The process we started, execed in place: same PID, same command line, same name.
    BOOST_TEST(std::filesystem::read_symlink(proc + "/exe").filename() == "loaderlens-record");
    BOOST_TEST(read_all(proc + "/comm") == "loaderlens\n");
    BOOST_TEST(read_all(proc + "/cmdline").starts_with(cli_path() + '\0' + "record"));
    const std::string maps = read_all(proc + "/maps");
    BOOST_REQUIRE(maps.find("libsqlite3") != std::string::npos); // the maps were read
    for (const char* library : {"libhdf5", "libcurl", "libcrypto", "liblmdb", "libtomlplusplus"})
        BOOST_TEST(maps.find(library) == std::string::npos, library << " is mapped:\n" << maps);
}

// Help, bad input and its exit code are loaderlens's own: it parses before it execs.
BOOST_AUTO_TEST_CASE(bad_input_never_reaches_the_recorder) {
    TempDir dir;
    const auto result =
        run({cli_path(), "record", "-o", dir.file("r.db"), "--intervall", "1s", "--", "true"});
    BOOST_TEST(result.exit_code == 2);
    BOOST_TEST(result.err.find("--interval") != std::string::npos, result.err);
    BOOST_TEST(!std::filesystem::exists(dir.file("r.db")));
}

// A loaderlens copied alone (no loaderlens-record beside it, no libexec) records in its own
// process, as before.
BOOST_AUTO_TEST_CASE(a_loaderlens_alone_records_in_its_own_process) {
    TempDir dir;
    const std::string alone = dir.file("loaderlens");
    std::filesystem::copy_file(cli_path(), alone);
    std::filesystem::permissions(alone, std::filesystem::perms::owner_exec,
                                 std::filesystem::perm_options::add);
    Child recorder(
        {alone, "record", "-q", "-o", dir.file("r.db"), "--", "sh", "-c", waits_for_its_sample});
    BOOST_REQUIRE(recorder.wait_for_line("sampled", 30s));
    const std::string proc = "/proc/" + std::to_string(recorder.pid());
    BOOST_TEST(std::filesystem::read_symlink(proc + "/exe") == alone);
    BOOST_TEST(read_all(proc + "/maps").find("libhdf5") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
