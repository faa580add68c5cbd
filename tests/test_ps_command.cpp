// SPDX-License-Identifier: MIT
// `loaderlens ps` run as a user would: it finds a forked test tree's main and marks it and its
// workers (JSON parsed with nlohmann, figures against /proc read directly; the text table);
// its options and their errors.
#include "loader_tree.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sys/prctl.h>
#include <unistd.h>

using namespace loaderlens::test;
using nlohmann::json;

namespace {

json ps_json(std::vector<std::string> options) {
    std::vector<std::string> argv{cli_path(), "ps", "--json", "--interval", "0"};
    argv.insert(argv.end(), options.begin(), options.end());
    const auto result = run(argv);
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    BOOST_TEST(result.err.empty());
    return json::parse(result.out);
}

const json* entry(const json& out, pid_t pid) {
    for (const json& p : out["processes"])
        if (p["pid"] == pid) return &p;
    return nullptr;
}

// The PID in a table line's first column, or 0 (the header).
pid_t pid_column(const std::string& line) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos) return 0;
    pid_t pid = 0;
    std::from_chars(line.data() + start, line.data() + line.size(), pid);
    return pid;
}

// The line of the table that lists `pid`, or "".
std::string line_of(const std::vector<std::string>& lines, pid_t pid) {
    for (const std::string& line : lines)
        if (pid_column(line) == pid) return line;
    return "";
}

} // namespace

BOOST_AUTO_TEST_SUITE(ps_command)

BOOST_AUTO_TEST_CASE(json_marks_a_forked_trees_main_and_workers) {
    LoaderTree tree(2, 1);
    const json out = ps_json({});
    const json* main = entry(out, tree.main());
    BOOST_REQUIRE_MESSAGE(main, "the tree's main " << tree.main() << " is not listed");
    BOOST_TEST((*main)["loader"]["role"] == "main");
    BOOST_TEST((*main)["loader"]["rule"] == "pt_data_worker children");
    BOOST_TEST((*main)["loader"]["workers"].get<std::vector<pid_t>>() == tree.workers(),
               boost::test_tools::per_element());
    for (pid_t pid : {tree.main(), tree.workers()[0], tree.workers()[1], tree.helpers()[0]}) {
        const json* p = entry(out, pid);
        BOOST_REQUIRE(p);
        const ProcFacts facts = proc_facts(pid);
        BOOST_TEST_CONTEXT("PID " << pid) {
            BOOST_TEST((*p)["ppid"] == facts.ppid);
            BOOST_TEST((*p)["comm"] == facts.comm);
            BOOST_TEST((*p)["uid"] == facts.effective_uid);
            BOOST_TEST((*p)["start_ticks"] == facts.start_ticks);
            BOOST_TEST((*p)["state"] == std::string(1, facts.state));
            BOOST_TEST((*p)["res_kib"] == facts.vm_rss_kb);
            BOOST_TEST((*p)["cpu_percent"].is_number());
        }
    }
    for (pid_t pid : tree.workers()) {
        BOOST_TEST((*entry(out, pid))["loader"]["role"] == "worker");
        BOOST_TEST((*entry(out, pid))["loader"]["main"] == tree.main());
    }
    BOOST_TEST((*entry(out, tree.helpers()[0]))["loader"].is_null());
}

// The table: the main marked with its worker count, its workers on the lines right below it,
// every line within 80 columns when the width is unknown (not a terminal, no $COLUMNS).
BOOST_AUTO_TEST_CASE(table_lists_workers_under_their_main) {
    LoaderTree tree(2, 1);
    const auto result = run({"/usr/bin/env", "-u", "COLUMNS", cli_path(), "ps", "--interval", "0"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    const auto lines = lines_of(result.out);
    BOOST_REQUIRE(!lines.empty());
    BOOST_TEST(lines[0].find("PID") != std::string::npos);
    for (const std::string& line : lines)
        BOOST_TEST(line.size() <= 80u, line);
    const auto main = std::find(lines.begin(), lines.end(), line_of(lines, tree.main()));
    BOOST_REQUIRE(main != lines.end());
    BOOST_TEST(main->find(" main(2) ") != std::string::npos, *main);
    BOOST_REQUIRE(lines.end() - main > 2);
    for (int i = 0; i < 2; ++i) {
        const std::string& worker = *(main + 1 + i);
        BOOST_TEST(pid_column(worker) == tree.workers()[i], worker);
        BOOST_TEST(worker.find(" worker ") != std::string::npos, worker);
        BOOST_TEST(worker.find(" \\_ ") != std::string::npos, worker);
    }
    const std::string helper = line_of(lines, tree.helpers()[0]);
    BOOST_TEST(helper.find("worker") == std::string::npos, helper);
}

// --loaders keeps only mains and workers; --user keeps only that user's.
BOOST_AUTO_TEST_CASE(loaders_and_user_select, *LOADERLENS_MAY_SKIP) {
    LoaderTree tree(1, 1);
    const json loaders = ps_json({"--loaders", "--all"});
    BOOST_TEST(entry(loaders, tree.main()) != nullptr);
    BOOST_TEST(entry(loaders, tree.workers()[0]) != nullptr);
    BOOST_TEST(entry(loaders, tree.helpers()[0]) == nullptr);
    for (const json& p : loaders["processes"])
        BOOST_TEST(!p["loader"].is_null(), p.dump());

    if (!precondition(geteuid() == 0, "needs root to make a process of user nobody",
                      InCi::must_have))
        return;
    ForkGuard nobody([] {
        const pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
            for (;;)
                pause();
        }
        return pid;
    }());
    for (int i = 0; i < 200 && proc_facts(nobody.pid()).effective_uid != 65534; ++i)
        usleep(10'000);
    const json by_number = ps_json({"--user", "65534"});
    BOOST_TEST(entry(by_number, nobody.pid()) != nullptr);
    BOOST_TEST(entry(by_number, tree.main()) == nullptr);
    for (const json& p : by_number["processes"])
        BOOST_TEST(p["uid"] == 65534);
    const json by_name = ps_json({"--user", "nobody"});
    BOOST_TEST(entry(by_name, nobody.pid()) != nullptr);
    const json mine = ps_json({}); // default: the user running it (root here)
    BOOST_TEST(entry(mine, nobody.pid()) == nullptr);
    BOOST_TEST(entry(mine, tree.main()) != nullptr);
}

BOOST_AUTO_TEST_CASE(python_forks_are_marked_through_the_cli, *LOADERLENS_MAY_SKIP) {
    if (!precondition(std::filesystem::exists("/usr/bin/python3"), "needs /usr/bin/python3",
                      InCi::must_have))
        return;
    Child python({"/usr/bin/python3", "-c", R"py(
import os, time
for _ in range(2):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
print("ready", flush=True)
time.sleep(60)
)py"});
    BOOST_REQUIRE(python.wait_for_line("ready", std::chrono::seconds(20)));
    const json out = ps_json({});
    const json* main = entry(out, python.pid());
    BOOST_REQUIRE(main);
    BOOST_TEST((*main)["loader"]["role"] == "main");
    BOOST_TEST((*main)["loader"]["rule"] == "forked python children");
    BOOST_TEST((*main)["loader"]["workers"].get<std::vector<pid_t>>() == children_of(python.pid()),
               boost::test_tools::per_element());
}

// Bad input: one line on stderr naming the option, exit 2, nothing on stdout.
BOOST_AUTO_TEST_CASE(bad_options_are_named) {
    struct Case {
        std::vector<std::string> options;
        std::string named;
    };
    for (const Case& c : std::vector<Case>{{{"--user", "no-such-user-x"}, "--user no-such-user-x"},
                                           {{"--interval", "fast"}, "--interval fast"},
                                           {{"--interval", "11s"}, "--interval 11s"},
                                           {{"--interval", "-1"}, "--interval"},
                                           {{"--all", "--user", "root"}, "--user"},
                                           {{"--sort"}, "--sort"}}) {
        std::vector<std::string> argv{cli_path(), "ps"};
        argv.insert(argv.end(), c.options.begin(), c.options.end());
        const auto result = run(argv);
        BOOST_TEST_CONTEXT(c.named) {
            BOOST_TEST(result.exit_code == 2);
            BOOST_TEST(result.out.empty());
            BOOST_TEST(lines_of(result.err).size() == 1u, result.err);
            BOOST_TEST(result.err.find(c.named) != std::string::npos, result.err);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
