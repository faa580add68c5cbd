// SPDX-License-Identifier: MIT
// The one output rule (loaderlens/output_rule.hpp, docs/outputs.md), enumerated: every output
// option of every command against every input of that command, each reached through the same
// name, a hard link, a symbolic link and a directory that is a symbolic link; and each output a
// FIFO. Every case must be refused with exit 2 and one line, and leave the input byte-identical
// (and a FIFO a FIFO). The GUI's --screenshot: tests/gui/test_gui_window.cpp.
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sys/stat.h>

using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

// The files every command reads, made once per case directory.
struct Inputs {
    std::string recording, other, budget, dataset, followed;
    std::string made; // the recording `check -- CMD` / `check replay` makes (absent before)
    explicit Inputs(const TempDir& dir) {
        recording = dir.file("run.db");
        other = dir.file("other.db");
        for (const std::string* r : {&recording, &other}) {
            auto recorded = run({cli_path(), "record", "-q", "-o", *r, "--", "true"});
            BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);
        }
        made = dir.file("made.db");
        budget = dir.file("budget.toml");
        std::ofstream(budget) << "[findings]\nforbid = [\"anon_leak\"]\n";
        dataset = dir.file("data.npy");
        auto generated =
            run({cli_path(), "mkdata", "npy", dataset, "--count", "16", "--shape", "8"});
        BOOST_REQUIRE_MESSAGE(generated.exit_code == 0, generated.err);
        // .prom: the metrics textfile's name must end so, or it is refused for its name alone.
        followed = dir.file("followed.prom");
        std::ofstream(followed) << "a file record --file follows\n";
    }
};

// A command with one output: `argv(OUT)` runs it writing OUT; `inputs` are the files it reads.
struct Case {
    std::string name; // "check --junit"
    std::function<std::vector<std::string>(const Inputs&, const std::string& out)> argv;
    std::function<std::vector<std::string>(const Inputs&)> inputs;
};

const std::vector<Case>& cases() {
    static const std::vector<Case> table{
        {"export -o",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{cli_path(), "export", "-o", out, in.recording};
         },
         [](const Inputs& in) { return std::vector<std::string>{in.recording}; }},
        {"check --junit (a recording)",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{cli_path(), "check",      "--budget",
                                             in.budget,  "--baseline", in.other,
                                             "--junit",  out,          in.recording};
         },
         [](const Inputs& in) {
             return std::vector<std::string>{in.recording, in.budget, in.other};
         }},
        {"check --junit (-- CMD)",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{cli_path(),  "check", "--budget", in.budget, "--junit",
                                             out,         "-q",    "-o",       in.made,   "--file",
                                             in.followed, "--",    "true"};
         },
         [](const Inputs& in) {
             return std::vector<std::string>{in.budget, in.followed, in.made};
         }},
        {"check --junit (replay)",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{
                 cli_path(), "check",     "--budget", in.budget, "--junit", out,    "replay",
                 in.dataset, "--workers", "0",        "-q",      "-o",      in.made};
         },
         [](const Inputs& in) {
             return std::vector<std::string>{in.budget, in.dataset, in.made};
         }},
        {"merge -o -f",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{cli_path(), "merge",      "-f",    "-o",
                                             out,        in.recording, in.other};
         },
         [](const Inputs& in) {
             return std::vector<std::string>{in.recording, in.other};
         }},
        {"record -f -o",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{cli_path(), "record", "-q",        "-f", "-o",
                                             out,        "--file", in.followed, "--", "true"};
         },
         [](const Inputs& in) { return std::vector<std::string>{in.followed}; }},
        {"record --metrics-textfile",
         [](const Inputs& in, const std::string& out) {
             return std::vector<std::string>{cli_path(),
                                             "record",
                                             "-q",
                                             "-o",
                                             fs::path(in.recording).parent_path() / "m.db",
                                             "--metrics-textfile",
                                             out,
                                             "--file",
                                             in.followed,
                                             "--",
                                             "true"};
         },
         [](const Inputs& in) { return std::vector<std::string>{in.followed}; }},
    };
    return table;
}

void check_refused(const std::string& what, const RunResult& r,
                   const std::vector<std::pair<std::string, std::string>>& before) {
    BOOST_TEST(r.exit_code == 2, what << ": exit " << r.exit_code << ": " << r.err);
    BOOST_TEST(one_line(r.err), what << ": " << r.err);
    for (const auto& [path, bytes] : before)
        BOOST_TEST(slurp(path) == bytes, what << ": " << path << " changed");
}

} // namespace

BOOST_AUTO_TEST_SUITE(output_rule)

// Each output option against each input of its command: the same name, a hard link, a symbolic
// link, the name reached through a directory that is a symbolic link. The metrics textfile must
// also end in .prom: an input named so is made for it.
BOOST_AUTO_TEST_CASE(no_output_is_an_input_of_its_command) {
    TempDir dir;
    const Inputs in(dir);
    fs::create_directory_symlink(dir.path(), dir.file("via"));
    for (const Case& c : cases()) {
        std::vector<std::pair<std::string, std::string>> before;
        for (const std::string& input : c.inputs(in))
            if (fs::exists(input)) before.emplace_back(input, slurp(input));
        for (const std::string& input : c.inputs(in)) {
            const std::string name = fs::path(input).filename().string();
            std::vector<std::pair<std::string, std::string>> outputs{
                {"the same name", input}, {"through a linked directory", dir.file("via/" + name)}};
            if (input.ends_with(".db")) outputs.emplace_back("its -wal", input + "-wal");
            if (fs::exists(input)) {
                fs::create_hard_link(input, dir.file("hard-" + name));
                fs::create_symlink(input, dir.file("sym-" + name));
                outputs.emplace_back("a hard link", dir.file("hard-" + name));
                outputs.emplace_back("a symbolic link", dir.file("sym-" + name));
            }
            for (const auto& [how, out] : outputs) {
                const RunResult r = run(c.argv(in, out), std::chrono::seconds(30));
                check_refused(c.name + " = " + name + " (" + how + ")", r, before);
                BOOST_TEST(!fs::exists(in.made), c.name << ": " << how << ": a recording made");
                fs::remove(in.made);
            }
            fs::remove(dir.file("hard-" + name));
            fs::remove(dir.file("sym-" + name));
        }
        // The control: a new name is written (or `check` fails a rule, 3), so that the refusals
        // above are the rule's and not some other complaint about the command line.
        const std::string fresh = dir.file("fresh.prom");
        const RunResult ok = run(c.argv(in, fresh), std::chrono::seconds(30));
        BOOST_TEST((ok.exit_code == 0 || ok.exit_code == 3), c.name << ": " << ok.err);
        BOOST_TEST(fs::exists(fresh), c.name);
        for (const auto& [path, bytes] : before)
            BOOST_TEST(slurp(path) == bytes, c.name << ": " << path << " changed");
        fs::remove(fresh);
        fs::remove(in.made);
        fs::remove(dir.file("m.db"));
    }
}

// An output that is a FIFO: nobody may be made to wait on it and nothing is written into it. Only
// export -o writes a stream (documented: a FIFO with a reader, /dev/stdout); one nobody reads is
// exit 1 at once (test_output_safety.cpp).
BOOST_AUTO_TEST_CASE(no_output_is_a_fifo) {
    TempDir dir;
    const Inputs in(dir);
    const std::string fifo = dir.file("out.prom");
    BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    for (const Case& c : cases()) {
        if (c.name == "export -o") continue;
        const RunResult r = run(c.argv(in, fifo), std::chrono::seconds(30));
        check_refused(c.name + " = a FIFO", r, {});
        struct stat st {};
        BOOST_TEST((::lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)), c.name);
        fs::remove(in.made);
    }
}

BOOST_AUTO_TEST_SUITE_END()
