// SPDX-License-Identifier: MIT
// `record -- CMD` runs the command as it would run without the recorder: the signal dispositions
// loaderlens was started with (loaderlens itself ignores SIGPIPE to turn a closed pipe into an exit
// code, the command must not inherit that), and no death signal tied to the recorder (only
// replay's own loader gets one).
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace loaderlens::test;
using namespace std::chrono_literals;

namespace {

// The SigIgn mask the recorded command reports, as a number.
unsigned long long ignored_by_command(const std::string& shell_prefix, const TempDir& dir) {
    const std::string out = dir.file("sigign.txt");
    auto result = run({"sh", "-c",
                       shell_prefix + "exec " + cli_path() + " record -q -o " + dir.file("s.db") +
                           " -- sh -c 'grep SigIgn /proc/self/status > " + out + "'"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    std::filesystem::remove(dir.file("s.db"));
    std::ifstream in(out);
    std::string label, hex;
    in >> label >> hex;
    BOOST_REQUIRE_MESSAGE(label == "SigIgn:", "no SigIgn line in " << out);
    return std::stoull(hex, nullptr, 16);
}

constexpr unsigned long long bit(int signal) {
    return 1ULL << (signal - 1);
}

bool running(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

} // namespace

BOOST_AUTO_TEST_SUITE(launched_command)

BOOST_AUTO_TEST_CASE(signal_dispositions_are_the_callers) {
    TempDir dir;
    // Started normally: the command ignores neither SIGPIPE (which loaderlens ignores for itself)
    // nor SIGHUP.
    const auto plain = ignored_by_command("", dir);
    BOOST_TEST((plain & bit(SIGPIPE)) == 0u, "SigIgn " << std::hex << plain);
    BOOST_TEST((plain & bit(SIGHUP)) == 0u, "SigIgn " << std::hex << plain);
    // Started as under nohup (SIGHUP ignored) and with SIGPIPE ignored: the command still ignores
    // both, as it would without the recorder.
    const auto ignoring = ignored_by_command("trap '' HUP PIPE; ", dir);
    BOOST_TEST((ignoring & bit(SIGPIPE)) != 0u, "SigIgn " << std::hex << ignoring);
    BOOST_TEST((ignoring & bit(SIGHUP)) != 0u, "SigIgn " << std::hex << ignoring);
}

// The user's command outlives a recorder killed outright: the recorder never ties the command's
// life to its own (PR_SET_PDEATHSIG is for replay's loader only).
BOOST_AUTO_TEST_CASE(the_command_outlives_a_killed_recorder) {
    TempDir dir;
    const std::string pid_file = dir.file("command.pid");
    Child recorder({cli_path(), "record", "-q", "-o", dir.file("r.db"), "--", "sh", "-c",
                    "echo $$ > " + pid_file + "; exec sleep 30"});
    pid_t command = 0;
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         command == 0 && std::chrono::steady_clock::now() < deadline;
         std::this_thread::sleep_for(20ms)) {
        std::ifstream in(pid_file);
        in >> command;
    }
    BOOST_REQUIRE_MESSAGE(command > 0, "the command never started");
    ::kill(recorder.pid(), SIGKILL);
    BOOST_REQUIRE(recorder.wait(5s));
    std::this_thread::sleep_for(500ms);
    BOOST_TEST(running(command), "the command died with the recorder");
    ::kill(command, SIGKILL);
}

BOOST_AUTO_TEST_SUITE_END()
