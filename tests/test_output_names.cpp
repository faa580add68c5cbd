// SPDX-License-Identifier: MIT
// `%j %s %t %a %N %p %%` in every output path option, as in `record -o` (cli/output_name.hpp):
// `check --junit`, `export -o`, `merge -o`. Under `srun -n2` each task's command line is the same,
// so only the expansion keeps one task from replacing the other's file. The CLI runs with the
// SLURM variables set in its own environment (`env`), as srun sets them; the real-SLURM test is
// tests/slurm's. A name that expands into an input is refused as before.
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <set>

using namespace loaderlens::test;

namespace {

// The CLI as task `task` of step 3 of job 4242 on node n7 would run it.
std::vector<std::string> in_task(int task, std::vector<std::string> argv) {
    std::vector<std::string> out{"/usr/bin/env",
                                 "SLURM_JOB_ID=4242",
                                 "SLURM_STEP_ID=3",
                                 "SLURM_PROCID=" + std::to_string(task),
                                 "SLURMD_NODENAME=n7",
                                 "SLURM_ARRAY_TASK_ID=5",
                                 cli_path()};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

std::set<std::string> names_in(const TempDir& dir) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
        names.insert(entry.path().filename().string());
    return names;
}

std::uintmax_t size_of(const std::string& path) {
    return std::filesystem::file_size(path);
}

struct Recorded {
    TempDir dir;
    std::string recording = dir.file("run.db"), budget = dir.file("budget.toml");
    Recorded() {
        const RunResult r =
            run({cli_path(), "record", "-q", "-o", recording, "--", "sleep", "0.5"});
        BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        std::ofstream(budget) << "[schedulers]\nslurm_linux = \"100GiB\"\n";
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(output_names)

BOOST_AUTO_TEST_CASE(junit_export_and_merge_outputs_are_expanded_per_task) {
    Recorded r;
    for (int task : {0, 1}) {
        const RunResult check =
            run(in_task(task, {"check", "--budget", r.budget, "--junit",
                               r.dir.file("junit-%j.%s.%t.%a.%N.xml"), r.recording}));
        BOOST_TEST(check.exit_code == 0, check.err);
        const RunResult exported =
            run(in_task(task, {"export", "--format", "json", "-o",
                               r.dir.file("export-%j.%t-%%.json"), r.recording}));
        BOOST_TEST(exported.exit_code == 0, exported.exit_code << ": " << exported.err);
    }
    const RunResult merged =
        run(in_task(0, {"merge", "-q", r.recording, "-o", r.dir.file("job-%j.db")}));
    BOOST_TEST(merged.exit_code == 0, merged.err);
    const std::set<std::string> want{"run.db",
                                     "budget.toml",
                                     "junit-4242.3.0.5.n7.xml",
                                     "junit-4242.3.1.5.n7.xml",
                                     "export-4242.0-%.json",
                                     "export-4242.1-%.json",
                                     "job-4242.db"};
    BOOST_TEST(names_in(r.dir) == want, [&] {
        std::string got;
        for (const std::string& name : names_in(r.dir))
            got += name + " ";
        return got;
    }());
}

BOOST_AUTO_TEST_CASE(a_name_that_expands_into_an_input_is_refused) {
    Recorded r;
    const std::string input = r.dir.file("4242.db");
    std::filesystem::rename(r.recording, input);
    const auto before = size_of(input);
    for (const std::vector<std::string>& argv :
         {std::vector<std::string>{"export", "-o", r.dir.file("%j.db"), input},
          {"check", "--budget", r.budget, "--junit", r.dir.file("%j.db"), input},
          {"merge", "-q", "--force", input, "-o", r.dir.file("%j.db")}}) {
        const RunResult refused = run(in_task(0, argv));
        BOOST_TEST(refused.exit_code == 2, argv[0] << ": " << refused.err);
        BOOST_TEST(refused.err.find(input) != std::string::npos, refused.err);
        BOOST_TEST(std::count(refused.err.begin(), refused.err.end(), '\n') == 1, refused.err);
        BOOST_TEST(size_of(input) == before);
    }
    BOOST_TEST(run({cli_path(), "report", input}).exit_code == 0);
}

BOOST_AUTO_TEST_SUITE_END()
