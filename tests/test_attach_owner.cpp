// SPDX-License-Identifier: MIT
// `record --pid` of another user's process: recorded, with one warning line naming its owner and
// what will be unavailable when we may not read its memory (not root, no CAP_SYS_PTRACE); no
// warning when we may (root).
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> as_nobody{"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup",
                                         "--clear-groups"};

} // namespace

BOOST_AUTO_TEST_SUITE(attach_owner)

// Run as nobody against a root process: one warning line naming the PID and its owner, then a
// recording (statm and status are readable), ended by SIGINT with exit 0.
BOOST_AUTO_TEST_CASE(another_users_process_is_recorded_with_its_owner_named, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to run the CLI as nobody", InCi::must_have) ||
        !precondition(fs::exists("/usr/bin/setpriv"), "needs setpriv (util-linux)",
                      InCi::must_have))
        return;
    TempDir dir;
    fs::permissions(dir.path(), fs::perms::all, fs::perm_options::add); // nobody writes here
    ForkGuard target(fork_paused());
    const std::string out = dir.file("other.db");
    // timeout(1) sends SIGINT after 0.7 s and exits with the recorder's own status.
    std::vector<std::string> argv{"/usr/bin/timeout", "--preserve-status", "-s", "INT", "0.7"};
    argv.insert(argv.end(), as_nobody.begin(), as_nobody.end());
    argv.insert(argv.end(),
                {cli_path(), "record", "-q", "-o", out, "--pid", std::to_string(target.pid())});
    const auto result = run(argv, std::chrono::seconds(20));
    BOOST_TEST(result.exit_code == 0, result.err);
    BOOST_TEST(lines_of(result.err).size() == 1u, result.err);
    BOOST_TEST(result.err.starts_with("loaderlens: --pid " + std::to_string(target.pid()) +
                                      ": not your process: owned by root (uid 0): PSS, USS, "
                                      "mapped files and residency will be unavailable"),
               result.err);
    BOOST_TEST(fs::exists(out));
}

// Root may record nobody's process: no such refusal, a finished recording once it exits.
BOOST_AUTO_TEST_CASE(root_records_another_users_process, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to make a process of user nobody",
                      InCi::must_have))
        return;
    TempDir dir;
    ForkGuard target(fork_paused_nobody());
    Child recorder({cli_path(), "record", "-q", "-o", dir.file("nobody.db"), "--pid",
                    std::to_string(target.pid())});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    target.kill_and_reap();
    const auto status = recorder.wait(std::chrono::seconds(20));
    BOOST_REQUIRE(status.has_value());
    BOOST_TEST(WIFEXITED(*status));
    BOOST_TEST(WEXITSTATUS(*status) == 0);
    BOOST_TEST(fs::exists(dir.file("nobody.db")));
}

BOOST_AUTO_TEST_SUITE_END()
