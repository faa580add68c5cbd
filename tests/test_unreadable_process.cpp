// SPDX-License-Identifier: MIT
// Recording a process whose /proc files the recorder may not read (another user's, no
// CAP_SYS_PTRACE), and a --file it may not open: the figures it could not read are reported as
// unavailable with the reason, never as "nothing" or 0.
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace loaderlens::test;

namespace {

// The oracle: the kernel's own maps file, read as root, lists `path` for `pid`.
bool kernel_lists_mapping(pid_t pid, const std::string& path) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.size() >= path.size() &&
            line.compare(line.size() - path.size(), path.size(), path) == 0)
            return true;
    return false;
}

std::string section(const std::string& text, const std::string& title) {
    const auto start = text.find(title);
    if (start == std::string::npos) return {};
    const auto end = text.find("\n\n", start);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

} // namespace

BOOST_AUTO_TEST_SUITE(unreadable_process)

BOOST_AUTO_TEST_CASE(another_users_mappings_are_unavailable_not_none, *LOADERLENS_MAY_SKIP) {
    if (!precondition(::geteuid() == 0, "needs root to record a root process as nobody",
                      InCi::must_have) ||
        !precondition(fs::exists("/usr/bin/setpriv"), "needs setpriv (util-linux)",
                      InCi::must_have))
        return;
    TempDir dir;
    fs::permissions(dir.path(), fs::perms(0777)); // nobody writes the recording here
    const std::string data = dir.file("data.bin");
    const std::string secret = dir.file("secret.bin");
    make_file(data, 8 << 20);
    make_file(secret, 1 << 20);
    ::chmod(data.c_str(), 0600); // root's: the workers (root) map it, nobody may not open it
    ::chmod(secret.c_str(), 0600);

    Child workload(loaderlens::test::workload(data, 1, 1));
    BOOST_REQUIRE(workload.wait_for_line("ready", std::chrono::seconds(10)));
    const std::string out = dir.file("run.db");
    Child recorder({"/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                    cli_path(), "record", "-q", "--pid", std::to_string(workload.pid()), "-o", out,
                    "--file", secret, "--interval", "maps=200ms"});
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    // The oracle, while the tree is still there: the kernel says the data file is mapped.
    bool mapped = false;
    {
        std::ifstream children("/proc/" + std::to_string(workload.pid()) + "/task/" +
                               std::to_string(workload.pid()) + "/children");
        pid_t worker = 0;
        while (children >> worker)
            mapped = mapped || kernel_lists_mapping(worker, data);
    }
    BOOST_TEST(mapped);
    ::kill(recorder.pid(), SIGINT);
    const auto status = recorder.wait(std::chrono::seconds(10));
    BOOST_REQUIRE(status.has_value());
    BOOST_REQUIRE_MESSAGE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0, recorder.output());

    const auto text = run({cli_path(), "report", out});
    BOOST_REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    const std::string files = section(text.out, "Mapped files");
    BOOST_TEST_MESSAGE(files);
    BOOST_TEST(files.find("none above") == std::string::npos);
    BOOST_TEST(files.find("unavailable") != std::string::npos);
    BOOST_TEST(files.find("permission denied") != std::string::npos);

    const auto js = run({cli_path(), "report", "--json", out});
    BOOST_REQUIRE_MESSAGE(js.exit_code == 0, js.err);
    const json report = json::parse(js.out);
    // Every process of the tree is one whose smaps could not be read.
    BOOST_TEST(report["files_unavailable"].size() == report["processes"].size());
    for (const auto& u : report["files_unavailable"])
        BOOST_TEST(u["reason"].get<std::string>().find("permission denied") != std::string::npos);

    // The --file nobody could not open: no size, no inode, and the reason; never 0 KiB.
    BOOST_REQUIRE(report["residency"].size() >= 1u);
    bool seen = false;
    for (const auto& f : report["residency"]) {
        if (f["path"] != secret) continue;
        seen = true;
        BOOST_TEST(f["size_bytes"].is_null());
        BOOST_TEST(f["inode"].is_null());
        BOOST_TEST(f["unavailable_reason"].get<std::string>().find("Permission denied") !=
                   std::string::npos);
    }
    BOOST_TEST(seen);
    const std::string residency = section(text.out, "Page-cache residency");
    BOOST_TEST_MESSAGE(residency);
    BOOST_TEST(residency.find("(0 KiB") == std::string::npos);
    BOOST_TEST(residency.find("size n/a") != std::string::npos);
    BOOST_TEST(residency.find("via ?") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
