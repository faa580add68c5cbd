// SPDX-License-Identifier: MIT
// What a SLURM site applies, read at record time (docs/recording.md, "SLURM site"): the parsers
// on texts captured from SLURM 22.05 and written after its manuals
// (tests/fixtures/slurm/README.md), truncated and hostile texts; and `record` inside a faked job,
// with an scontrol that answers, one that hangs, and none.
#include "loaderlens/recording.hpp"
#include "loaderlens/slurm_site.hpp"
#include "loaderlens/slurm_site_reader.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(LOADERLENS_FIXTURES_DIR) + "/slurm/" + name);
    BOOST_REQUIRE_MESSAGE(in, "missing fixture " << name);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::string fixture_path(const std::string& name) {
    return std::string(LOADERLENS_FIXTURES_DIR) + "/slurm/" + name;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

// Rows as text, one "key=value" line each, for comparing and printing.
std::string flat(const std::vector<std::pair<std::string, std::string>>& rows) {
    std::string out;
    for (const auto& [key, value] : rows)
        out += key + "=" + value + "\n";
    return out;
}

// The meta rows of scontrol_show_config_cgroup.txt (no step rows).
std::vector<std::pair<std::string, std::string>> cgroup_config_rows() {
    return {{"slurm_site_source", "scontrol show config"},
            {"slurm_jobacct_gather_type", "jobacct_gather/cgroup"},
            {"slurm_jobacct_gather_params", ""},
            {"slurm_jobacct_gather_frequency_s", "30"},
            {"slurm_task_plugin", "task/cgroup,task/affinity"},
            {"slurm_constrain_ram_space", "yes"}};
}

void write_script(const std::string& path, const std::string& body) {
    std::ofstream(path) << "#!/bin/sh\n" << body;
    BOOST_REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

// `loaderlens record -q -o DB -- COMMAND` with PATH and the SLURM variables given (the test's own
// SLURM variables, if any, left out).
RunResult record_in_job(const std::string& path, const std::vector<std::string>& variables,
                        const std::string& db, const std::vector<std::string>& command) {
    std::vector<std::string> argv{"env",           "-u", "SLURM_JOB_ID", "-u",
                                  "SLURM_STEP_ID", "-u", "SLURM_CONF",   "PATH=" + path};
    argv.insert(argv.end(), variables.begin(), variables.end());
    argv.insert(argv.end(), {cli_path(), "record", "-q", "-o", db, "--"});
    argv.insert(argv.end(), command.begin(), command.end());
    return run(argv, std::chrono::seconds(60));
}

} // namespace

BOOST_AUTO_TEST_SUITE(slurm_site)

BOOST_AUTO_TEST_CASE(scontrol_show_config_of_slurm_22_05) {
    auto site = parse_scontrol_config(fixture("scontrol_show_config.txt"));
    BOOST_REQUIRE(site);
    BOOST_TEST(site->jobacct_gather_type.value_or("?") == "jobacct_gather/linux");
    BOOST_TEST(site->jobacct_gather_params.value_or("?") == "UsePss,OverMemoryKill");
    BOOST_TEST(site->jobacct_gather_frequency_s.value_or(-1) == 1);
    BOOST_TEST(site->task_plugin.value_or("?") == "task/none");
    BOOST_TEST(!site->constrain_ram_space); // no cgroup section without task/cgroup
}

BOOST_AUTO_TEST_CASE(scontrol_show_config_with_the_cgroup_section) {
    auto site = parse_scontrol_config(fixture("scontrol_show_config_cgroup.txt"));
    BOOST_REQUIRE(site);
    BOOST_TEST(site->jobacct_gather_type.value_or("?") == "jobacct_gather/cgroup");
    BOOST_TEST(site->jobacct_gather_params.value_or("?") == "");     // (null)
    BOOST_TEST(site->jobacct_gather_frequency_s.value_or(-1) == 30); // task=30,energy=0
    BOOST_TEST(site->task_plugin.value_or("?") == "task/cgroup,task/affinity");
    BOOST_TEST(site->constrain_ram_space.value_or("?") == "yes");
}

BOOST_AUTO_TEST_CASE(jobacct_gather_frequency_forms) {
    BOOST_TEST(parse_jobacct_gather_frequency("30").value_or(-1) == 30);
    BOOST_TEST(parse_jobacct_gather_frequency("task=30").value_or(-1) == 30);
    BOOST_TEST(parse_jobacct_gather_frequency("task=30,energy=0").value_or(-1) == 30);
    BOOST_TEST(parse_jobacct_gather_frequency("network=5,Task=12").value_or(-1) == 12);
    BOOST_TEST(parse_jobacct_gather_frequency("energy=0").value_or(-1) == 30); // task unset
    BOOST_TEST(parse_jobacct_gather_frequency("(null)").value_or(-1) == 30);
    BOOST_TEST(parse_jobacct_gather_frequency("").value_or(-1) == 30);
    BOOST_TEST(parse_jobacct_gather_frequency("0").value_or(-1) == 0); // disabled
    BOOST_TEST(parse_jobacct_gather_frequency("task=0").value_or(-1) == 0);
    for (const char* bad : {"abc", "task=", "task=x", "task=-1", "-5", "task=30,", "=3", "1e9"})
        BOOST_TEST(!parse_jobacct_gather_frequency(bad), bad);
}

BOOST_AUTO_TEST_CASE(slurm_conf_files) {
    SlurmConf conf = parse_slurm_conf(fixture("slurm.conf"));
    BOOST_TEST(conf.includes.empty());
    BOOST_TEST(conf.site.jobacct_gather_type.value_or("?") == "jobacct_gather/linux");
    BOOST_TEST(conf.site.jobacct_gather_params.value_or("?") == "UsePss,OverMemoryKill");
    BOOST_TEST(conf.site.jobacct_gather_frequency_s.value_or(-1) == 15); // the later line
    BOOST_TEST(conf.site.task_plugin.value_or("?") == "task/affinity");
    BOOST_TEST(!conf.site.constrain_ram_space);

    SlurmConf minimal = parse_slurm_conf(fixture("slurm_minimal.conf"));
    BOOST_TEST(minimal.site.jobacct_gather_type.value_or("?") == "jobacct_gather/none");
    BOOST_TEST(minimal.site.jobacct_gather_params.value_or("?") == "");
    BOOST_TEST(minimal.site.jobacct_gather_frequency_s.value_or(-1) == 30);
    BOOST_TEST(minimal.site.task_plugin.value_or("?") == "task/none");

    // What an included file may set stays unknown: no default is claimed for it.
    SlurmConf included = parse_slurm_conf(fixture("slurm_include.conf"));
    BOOST_REQUIRE_EQUAL(included.includes.size(), 1u);
    BOOST_TEST(included.includes[0] == "/etc/slurm/accounting.conf");
    BOOST_TEST(!included.site.jobacct_gather_type);
    BOOST_TEST(!included.site.jobacct_gather_frequency_s);
    BOOST_TEST(included.site.task_plugin.value_or("?") == "task/cgroup");
}

BOOST_AUTO_TEST_CASE(step_memory_per_node) {
    SlurmStepLimit one = parse_scontrol_step(fixture("scontrol_show_step.txt"), "1.0");
    BOOST_TEST(one.mem_kb_per_node.value_or(-1) == 700 * 1024);
    SlurmStepLimit two = parse_scontrol_step(fixture("scontrol_show_step_two_nodes.txt"), "1234.3");
    BOOST_TEST(two.mem_kb_per_node.value_or(-1) == 3 * 1024 * 1024 / 2);
    SlurmStepLimit other = parse_scontrol_step(fixture("scontrol_show_step.txt"), "1.1");
    BOOST_TEST(!other.mem_kb_per_node);
    BOOST_TEST(other.problem.find("not 1.1") != std::string::npos, other.problem);
    SlurmStepLimit no_mem = parse_scontrol_step(
        "StepId=5.0 UserId=0\n   Nodes=1 CPUs=1\n   TRES=cpu=1,node=1\n", "5.0");
    BOOST_TEST(!no_mem.mem_kb_per_node);
    BOOST_TEST(no_mem.problem.find("no memory") != std::string::npos, no_mem.problem);

    BOOST_TEST(parse_slurm_mem_kb("512").value_or(-1) == 512 * 1024); // no unit: MiB
    BOOST_TEST(parse_slurm_mem_kb("100K").value_or(-1) == 100);
    BOOST_TEST(parse_slurm_mem_kb("700M").value_or(-1) == 700 * 1024);
    BOOST_TEST(parse_slurm_mem_kb("2G").value_or(-1) == 2 * 1024 * 1024);
    BOOST_TEST(parse_slurm_mem_kb("1T").value_or(-1) == 1024LL * 1024 * 1024);
    BOOST_TEST(parse_slurm_mem_kb("1.5G").value_or(-1) == 1536 * 1024);
    for (const char* bad : {"", "M", "12X", "-5M", "1e9M", "G1", "1..5", "99999999999999999999T"})
        BOOST_TEST(!parse_slurm_mem_kb(bad), bad);
}

// Cut anywhere, or replaced by noise, a text gives fields that are unknown, never a crash or a
// made-up figure.
BOOST_AUTO_TEST_CASE(garbage_and_truncated_texts) {
    BOOST_TEST(!parse_scontrol_config("garbage\n"));
    BOOST_TEST(!parse_scontrol_config(""));
    const std::string config = fixture("scontrol_show_config.txt");
    const std::size_t type_line = config.find("JobAcctGatherType");
    auto cut = parse_scontrol_config(config.substr(0, type_line));
    BOOST_REQUIRE(cut);
    BOOST_TEST(!cut->jobacct_gather_type);
    BOOST_TEST(!cut->task_plugin);
    const std::string step = fixture("scontrol_show_step.txt");
    BOOST_TEST(!parse_scontrol_step(step.substr(0, step.find("TRES")), "1.0").mem_kb_per_node);
    BOOST_TEST(!parse_scontrol_step("", "1.0").mem_kb_per_node);
    BOOST_TEST(!parse_scontrol_step("StepId=1.0 Nodes=0 TRES=mem=1G", "1.0").mem_kb_per_node);
    for (const std::string& text :
         {config, fixture("scontrol_show_config_cgroup.txt"), step, fixture("slurm.conf")}) {
        for (std::size_t end = 0; end <= text.size(); end += 7) {
            const std::string part = text.substr(0, end);
            (void)parse_scontrol_config(part);
            (void)parse_slurm_conf(part);
            (void)parse_scontrol_step(part, "1.0");
        }
    }
    std::string noise;
    for (int i = 0; i < 4096; ++i)
        noise.push_back(static_cast<char>((i * 7919 + 13) % 256));
    (void)parse_scontrol_config("Configuration data as of\n" + noise);
    (void)parse_slurm_conf(noise);
    (void)parse_scontrol_step(noise, "1.0");

    // A hostile value is stored on one line and bounded.
    auto hostile = parse_scontrol_config("Configuration data as of now\nTaskPlugin = a\x1b[2Jb\n"
                                         "JobAcctGatherParams = " +
                                         std::string(5000, 'x') + "\n");
    BOOST_REQUIRE(hostile);
    SlurmSiteReading reading{.site = hostile, .site_source = "scontrol show config"};
    for (const auto& [key, value] : slurm_site_meta(reading)) {
        BOOST_TEST(value.find('\x1b') == std::string::npos, key);
        BOOST_TEST(value.size() <= 256u, key);
    }
}

BOOST_AUTO_TEST_CASE(meta_rows_of_a_reading) {
    SlurmSiteReading reading;
    reading.site = parse_scontrol_config(fixture("scontrol_show_config_cgroup.txt"));
    reading.site_source = "scontrol show config";
    reading.step_mem_kb = 716800;
    reading.step_source = "scontrol show step 1.0";
    const auto rows = slurm_site_meta(reading);
    std::vector<std::pair<std::string, std::string>> expected = cgroup_config_rows();
    expected.insert(expected.end(), {{"slurm_step_mem_kb", "716800"},
                                     {"slurm_step_source", "scontrol show step 1.0"}});
    BOOST_TEST(flat(rows) == flat(expected));

    const auto none = slurm_site_meta({.site_unavailable = "why", .step_unavailable = "because"});
    const std::vector<std::pair<std::string, std::string>> expected_none{
        {"slurm_site_unavailable", "why"}, {"slurm_step_unavailable", "because"}};
    BOOST_TEST(flat(none) == flat(expected_none));
}

// The runner: exit status, signal, a limit reached, output beyond the cap, LC_ALL and stdin.
BOOST_AUTO_TEST_CASE(bounded_runs) {
    using O = BoundedRun::Outcome;
    const auto limit = std::chrono::milliseconds(20'000);
    BoundedRun three = run_bounded("/bin/sh", {"-c", "exit 3"}, limit, 1024);
    BOOST_TEST((three.outcome == O::exited && three.code == 3));
    BoundedRun killed = run_bounded("/bin/sh", {"-c", "kill -9 $$"}, limit, 1024);
    BOOST_TEST((killed.outcome == O::killed_by_signal && killed.code == 9));
    BoundedRun said =
        run_bounded("/bin/sh", {"-c", "echo \"$LC_ALL\"; cat; echo end"}, limit, 1024);
    BOOST_TEST((said.outcome == O::exited && said.output == "C\nend\n")); // stdin: /dev/null
    BoundedRun flood = run_bounded("/usr/bin/yes", {}, limit, 1 << 20);
    BOOST_TEST((flood.outcome == O::too_much_output && flood.output.empty()));
    // The limit is the runner's own feature: a sleeper is killed at it, whole group included.
    BoundedRun hung = run_bounded("/bin/sh", {"-c", "/usr/bin/sleep 600 & wait"},
                                  std::chrono::milliseconds(300), 1024);
    BOOST_TEST((hung.outcome == O::timed_out));
    BoundedRun absent = run_bounded("/nonexistent/scontrol", {}, limit, 1024);
    BOOST_TEST((absent.outcome == O::exited && absent.code == 127));
}

// The reading never holds up the command: scontrol here waits for the command itself (a FIFO
// both open, a barrier; bounded by timeout(1) so that a recorder that waited for scontrol first
// fails the test instead of hanging it), then hangs with a child of its own holding its output. The
// command ran and ended while scontrol hung; the recording says why there is no site (scontrol
// timed out, the SLURM_CONF file missing), and the hung scontrol and its child are gone when record
// returns.
BOOST_AUTO_TEST_CASE(a_hung_scontrol_costs_only_the_meta) {
    TempDir dir;
    std::filesystem::create_directory(dir.file("bin"));
    const std::string barrier = dir.file("barrier");
    BOOST_REQUIRE(::mkfifo(barrier.c_str(), 0600) == 0);
    write_script(dir.file("bin/scontrol"), "echo go > '" + barrier +
                                               "'\n"
                                               "/usr/bin/sleep 3600 &\n"
                                               "echo $! > '" +
                                               dir.file("sleep.pid") + "'\nwait\n");
    const std::string db = dir.file("run.db");
    auto result = record_in_job(
        dir.file("bin"),
        {"SLURM_JOB_ID=12", "SLURM_STEP_ID=0", "SLURM_CONF=" + dir.file("absent.conf")}, db,
        {"/usr/bin/timeout", "30", "/bin/sh", "-c",
         "read x < '" + barrier + "'; echo \"$x\" > '" + dir.file("ran") + "'"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    BOOST_TEST(slurp(dir.file("ran")) == "go\n"); // the command met scontrol while it ran
    Recording rec(db);
    const std::string why = rec.meta("slurm_site_unavailable");
    BOOST_TEST(why.find("scontrol show config timed out after 5 s") != std::string::npos, why);
    BOOST_TEST(why.find(dir.file("absent.conf")) != std::string::npos, why);
    BOOST_TEST(rec.meta("slurm_site_source").empty());
    BOOST_TEST(rec.meta("slurm_step_unavailable").find("not asked") != std::string::npos);
    BOOST_TEST(rec.meta("exit_status") == "0");
    // scontrol (hung for 5 s, so scanned were it in the tree) ran outside the recorded tree.
    for (const ProcessInfo& process : rec.processes())
        BOOST_TEST(process.cmdline.find("scontrol") == std::string::npos, process.cmdline);
    // scontrol's own child was killed with it (its process group), so nothing holds on.
    const pid_t sleeper = std::stoi(slurp(dir.file("sleep.pid")));
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, sleeper, 0));
    if (pidfd >= 0) {
        pollfd pfd{pidfd, POLLIN, 0};
        BOOST_TEST(::poll(&pfd, 1, 10'000) == 1); // it exits (it may not be reaped yet)
        ::close(pidfd);
    }
}

// The reading process keeps nothing of the recorder's open: a recorder that ends at once (its
// command cannot run) while scontrol hangs is not held up by it through the job's standard output
// (here a pipe to cat, as srun's output would be). The barrier: scontrol, still running after
// record and cat ended, hands the test its "go".
BOOST_AUTO_TEST_CASE(the_reader_does_not_hold_the_jobs_output) {
    TempDir dir;
    std::filesystem::create_directory(dir.file("bin"));
    const std::string barrier = dir.file("barrier");
    BOOST_REQUIRE(::mkfifo(barrier.c_str(), 0600) == 0);
    write_script(dir.file("bin/scontrol"),
                 "echo go > '" + barrier + "'\nexec /usr/bin/sleep 3600\n");
    auto result = run({"/bin/sh", "-c",
                       "env -u SLURM_STEP_ID PATH='" + dir.file("bin") + "' SLURM_JOB_ID=12 '" +
                           cli_path() + "' record -o '" + dir.file("run.db") +
                           "' -- /nonexistent/command 2>&1 | /usr/bin/cat; exit 0"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    BOOST_TEST(result.out.find("/nonexistent/command: cannot run") != std::string::npos,
               result.out);
    const int fd = ::open(barrier.c_str(), O_RDONLY | O_NONBLOCK);
    BOOST_REQUIRE(fd >= 0);
    pollfd pfd{fd, POLLIN, 0};
    // Fails (no writer ever comes) when scontrol was killed before record's output ended.
    BOOST_TEST(::poll(&pfd, 1, 30'000) == 1);
    char word[8] = {};
    BOOST_TEST(::read(fd, word, sizeof word) == 3);
    ::close(fd);
}

// An scontrol that answers: every key, from the texts it printed, with LC_ALL=C.
BOOST_AUTO_TEST_CASE(scontrol_answers) {
    TempDir dir;
    std::filesystem::create_directory(dir.file("bin"));
    write_script(dir.file("bin/scontrol"),
                 "echo \"$LC_ALL\" > '" + dir.file("lc_all") +
                     "'\n"
                     "case \"$1 $2\" in\n"
                     "'show config') exec /usr/bin/cat '" +
                     fixture_path("scontrol_show_config_cgroup.txt") +
                     "';;\n"
                     "'show step') [ \"$3\" = 1234.3 ] && exec /usr/bin/cat '" +
                     fixture_path("scontrol_show_step_two_nodes.txt") +
                     "'; exit 1;;\nesac\nexit 2\n");
    const std::string db = dir.file("run.db");
    auto result = record_in_job(dir.file("bin"),
                                {"SLURM_JOB_ID=1234", "SLURM_STEP_ID=3", "SLURM_GTIDS=0,1",
                                 "SLURM_STEP_NUM_TASKS=4", "SLURM_STEP_NUM_NODES=2",
                                 "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_TASKS_PER_NODE=2(x2)",
                                 "SLURM_CONF=/etc/slurm/slurm.conf"},
                                dir.file("run-%j.%s.db"), {"/bin/true"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording rec(dir.file("run-1234.3.db"));
    std::map<std::string, std::string> expected{{"slurm_step_mem_kb", "1572864"}, // 3G over 2 nodes
                                                {"slurm_step_source", "scontrol show step 1234.3"},
                                                {"slurm_gtids", "0,1"},
                                                {"slurm_step_num_tasks", "4"},
                                                {"slurm_step_num_nodes", "2"},
                                                {"slurm_step_tasks_per_node", "2(x2)"},
                                                {"slurm_tasks_per_node", "2(x2)"},
                                                {"slurm_conf", "/etc/slurm/slurm.conf"},
                                                {"output_pattern", dir.file("run-%j.%s.db")}};
    for (const auto& row : cgroup_config_rows())
        expected.insert(row);
    const auto meta = rec.all_meta();
    for (const auto& [key, value] : expected) {
        BOOST_TEST_CONTEXT(key) {
            BOOST_REQUIRE(meta.contains(key));
            BOOST_TEST(meta.at(key) == value);
        }
    }
    BOOST_TEST(!meta.contains("slurm_site_unavailable"));
    BOOST_TEST(!meta.contains("slurm_step_unavailable"));
    BOOST_TEST(slurp(dir.file("lc_all")) == "C\n");
}

// No scontrol: the SLURM_CONF file is read instead; with no file either, one line says both.
BOOST_AUTO_TEST_CASE(without_scontrol_the_slurm_conf_file) {
    TempDir dir;
    std::filesystem::create_directory(dir.file("bin")); // PATH with no scontrol
    std::filesystem::copy_file(fixture_path("slurm.conf"), dir.file("slurm.conf"));
    auto result =
        record_in_job(dir.file("bin"),
                      {"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_CONF=" + dir.file("slurm.conf")},
                      dir.file("a.db"), {"/bin/true"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording a(dir.file("a.db"));
    BOOST_TEST(a.meta("slurm_site_source") == "SLURM_CONF " + dir.file("slurm.conf"));
    BOOST_TEST(a.meta("slurm_jobacct_gather_type") == "jobacct_gather/linux");
    BOOST_TEST(a.meta("slurm_jobacct_gather_params") == "UsePss,OverMemoryKill");
    BOOST_TEST(a.meta("slurm_jobacct_gather_frequency_s") == "15");
    BOOST_TEST(a.meta("slurm_task_plugin") == "task/affinity");
    BOOST_TEST(a.meta("slurm_step_unavailable") == "scontrol not found in PATH");
    BOOST_TEST(a.meta("slurm_site_unavailable", "none") == "none");

    // A FIFO as SLURM_CONF is refused at once, never waited on.
    BOOST_REQUIRE(::mkfifo(dir.file("fifo.conf").c_str(), 0600) == 0);
    result =
        record_in_job(dir.file("bin"), {"SLURM_JOB_ID=7", "SLURM_CONF=" + dir.file("fifo.conf")},
                      dir.file("b.db"), {"/bin/true"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    Recording b(dir.file("b.db"));
    BOOST_TEST(b.meta("slurm_site_unavailable") == "scontrol not found in PATH; SLURM_CONF " +
                                                       dir.file("fifo.conf") +
                                                       ": not a regular file");
    BOOST_TEST(b.meta("slurm_step_unavailable").find("no SLURM_STEP_ID") == 0);
}

// Outside SLURM nothing is run and no key is written.
BOOST_AUTO_TEST_CASE(outside_slurm_nothing_is_run) {
    TempDir dir;
    std::filesystem::create_directory(dir.file("bin"));
    write_script(dir.file("bin/scontrol"), "echo ran > '" + dir.file("ran") + "'\n");
    auto result = record_in_job(dir.file("bin"), {}, dir.file("a.db"), {"/bin/true"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    BOOST_TEST(!std::filesystem::exists(dir.file("ran")));
    for (const auto& [key, value] : Recording(dir.file("a.db")).all_meta())
        BOOST_TEST((!key.starts_with("slurm_site") && !key.starts_with("slurm_step") &&
                    !key.starts_with("slurm_jobacct")),
                   key);
    BOOST_TEST(Recording(dir.file("a.db")).meta("output_pattern") == dir.file("a.db"));
}

BOOST_AUTO_TEST_SUITE_END()
