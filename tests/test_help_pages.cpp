// SPDX-License-Identifier: MIT
// Help pages, man pages and bash completion as a user meets them: the pages are found by
// following `loaderlens --help` (what a user reads), not from the CLI's own tables.
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace loaderlens::test;

namespace {

std::vector<std::string> words_of(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;)
        words.push_back(word);
    return words;
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& word : words)
        out += (out.empty() ? "" : " ") + word;
    return out;
}

// Columns taken on a terminal: UTF-8 continuation bytes take none (the pages hold Σ).
std::size_t columns(const std::string& line) {
    std::size_t n = 0;
    for (const char c : line)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

RunResult help_page(const std::vector<std::string>& path, const std::string& width) {
    std::vector<std::string> argv{"env"};
    argv.push_back(width.empty() ? "-uCOLUMNS" : "COLUMNS=" + width);
    argv.push_back(cli_path());
    argv.insert(argv.end(), path.begin(), path.end());
    argv.push_back("--help");
    return run(argv);
}

// The names under a page's "Subcommands:" heading.
std::vector<std::string> subcommands_of(const std::string& page) {
    std::vector<std::string> names;
    bool in_list = false;
    for (const std::string& line : lines_of(page)) {
        if (line == "Subcommands:") {
            in_list = true;
        } else if (in_list && line.empty()) {
            in_list = false;
        } else if (in_list && line.starts_with("  ") && line[2] != ' ') {
            names.push_back(words_of(line).front());
        }
    }
    return names;
}

// Every page below loaderlens, loaderlens itself first ({}), by following each page's list.
std::vector<std::vector<std::string>> every_page() {
    std::vector<std::vector<std::string>> pages{{}};
    for (std::size_t i = 0; i < pages.size(); ++i) {
        const RunResult page = help_page(pages[i], "80");
        BOOST_REQUIRE_MESSAGE(page.exit_code == 0, joined(pages[i]) << " --help: " << page.err);
        for (const std::string& name : subcommands_of(page.out)) {
            std::vector<std::string> path = pages[i];
            path.push_back(name);
            pages.push_back(path);
        }
    }
    return pages;
}

// The example lines under "Examples:".
std::vector<std::string> examples_of(const std::string& page) {
    std::vector<std::string> examples;
    bool in_list = false;
    for (const std::string& line : lines_of(page)) {
        if (line == "Examples:") {
            in_list = true;
        } else if (in_list && line.starts_with("  loaderlens")) {
            examples.push_back(line.substr(2));
        } else {
            in_list = false;
        }
    }
    return examples;
}

// The option names of a page: the first column of its lines that start with a '-'.
std::set<std::string> options_of(const std::string& page) {
    std::set<std::string> names;
    for (const std::string& line : lines_of(page)) {
        const std::size_t start = line.find_first_not_of(' ');
        // Entries start at column 2 (4 in an option group); a wrapped description further in.
        if ((start != 2 && start != 4) || line[start] != '-') continue;
        const std::size_t end = line.find("  ", start);
        std::string head = line.substr(start, end == std::string::npos ? end : end - start);
        for (char& c : head)
            if (c == ',') c = ' ';
        for (std::string word : words_of(head))
            if (word.size() > 1 && word.starts_with('-') && word != "--")
                names.insert(word.substr(0, word.find('=')));
    }
    return names;
}

std::filesystem::path build_dir() {
    return std::filesystem::path(cli_path()).parent_path().parent_path();
}

// What the completion script of the build offers for `words` (the last one being completed), as
// bash would ask it; with bash-completion's helpers loaded first or not.
std::set<std::string> completed(const std::vector<std::string>& words, bool bash_completion) {
    const std::string driver =
        "[[ $2 == with ]] && source /usr/share/bash-completion/bash_completion\n"
        "source \"$1\"; shift 2\n"
        "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMP_LINE=\"$*\"; "
        "COMP_POINT=${#COMP_LINE}\n"
        "_loaderlens\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
    std::vector<std::string> argv{"bash",
                                  "-c",
                                  driver,
                                  "bash",
                                  (build_dir() / "completion" / "loaderlens").string(),
                                  bash_completion ? "with" : "without"};
    argv.insert(argv.end(), words.begin(), words.end());
    const RunResult result = run(argv);
    BOOST_TEST(result.exit_code == 0, result.err);
    std::set<std::string> offered;
    for (const std::string& line : lines_of(result.out))
        if (!line.empty()) offered.insert(line);
    return offered;
}

std::set<std::string> set_of(std::initializer_list<std::string> words) {
    return {words};
}

// The cases both with and without bash-completion's helpers.
void check_completion(bool bash_completion) {
    BOOST_TEST(completed({"loaderlens", "rep"}, bash_completion) == set_of({"replay", "report"}));
    BOOST_TEST(completed({"loaderlens", "report", "--j"}, bash_completion) == set_of({"--json"}));
    BOOST_TEST(completed({"loaderlens", "export", "--format", "o"}, bash_completion) ==
               set_of({"openmetrics"}));
    BOOST_TEST(completed({"loaderlens", "mkdata", "n"}, bash_completion) == set_of({"npy"}));
    // File names: a recording to read, a file to write, the command after --.
    TempDir dir;
    make_file(dir.file("run.db"), 16);
    BOOST_TEST(completed({"loaderlens", "report", dir.file("ru")}, bash_completion) ==
               set_of({dir.file("run.db")}));
    BOOST_TEST(completed({"loaderlens", "record", "-o", dir.file("ru")}, bash_completion) ==
               set_of({dir.file("run.db")}));
    BOOST_TEST(completed({"loaderlens", "record", "-o", "x.db", "--", "tru"}, bash_completion)
                   .count("true") == 1);
}

} // namespace

BOOST_AUTO_TEST_SUITE(help_pages)

BOOST_AUTO_TEST_CASE(every_page_fits_its_width_and_shows_an_example) {
    const auto pages = every_page();
    // loaderlens, its commands, mkdata's four kinds, check's replay.
    BOOST_TEST(pages.size() >= 12u);
    // "" is no COLUMNS and a pipe: 80. 40 is the narrowest page.
    for (const std::string width : {"80", "60", "40", ""}) {
        const std::size_t limit = width.empty() ? 80 : std::stoul(width);
        for (const auto& path : pages) {
            const RunResult page = help_page(path, width);
            BOOST_TEST_CONTEXT("loaderlens " << joined(path) << " --help, COLUMNS=" << width) {
                BOOST_TEST(page.exit_code == 0);
                BOOST_TEST(page.err.empty());
                for (const std::string& line : lines_of(page.out))
                    BOOST_TEST(columns(line) <= limit, "too wide: " << line);
                if (limit >= 60) BOOST_TEST(!examples_of(page.out).empty());
            }
        }
    }
    // Wrapped, not cut: record's long -o description is whole at 60 columns, on several lines.
    const RunResult record = help_page({"record"}, "60");
    std::string text;
    for (const std::string& line : lines_of(record.out))
        text += " " + line;
    BOOST_TEST(joined(words_of(text))
                   .find("%p recorder PID, %% a % (default: "
                         "loaderlens-%N-%p.db)") != std::string::npos);
}

// Without COLUMNS, the width of the terminal the page goes to (script(1) gives it one of 50).
BOOST_AUTO_TEST_CASE(without_columns_the_terminal_width_is_used) {
    const RunResult shown =
        run({"script", "-qec", "stty cols 50 && env -u COLUMNS " + cli_path() + " record --help",
             "/dev/null"});
    BOOST_TEST_REQUIRE(shown.exit_code == 0, shown.err);
    std::size_t widest = 0;
    for (std::string line : lines_of(shown.out)) {
        if (line.ends_with('\r')) line.pop_back();
        widest = std::max(widest, columns(line));
    }
    BOOST_TEST(widest <= 50u);
    BOOST_TEST(widest > 40u); // not the narrowest page either
}

BOOST_AUTO_TEST_CASE(record_help_says_where_markers_come_from) {
    const std::string page = joined(words_of(help_page({"record"}, "80").out));
    for (const char* needle :
         {"LOADERLENS_MARKERS", "loaderlens.torch.track", "docs/python.md", "docs/recording.md"})
        BOOST_TEST(page.find(needle) != std::string::npos, "record --help lacks " << needle);
}

// Each example names options its command has (read from that command's page and those above
// it: check --budget ... replay), and its values pass the parser: with --help added, the real CLI
// parses and checks every value, then prints the page instead of running (a bad value is exit 2).
BOOST_AUTO_TEST_CASE(every_example_parses) {
    std::map<std::vector<std::string>, std::string> pages;
    for (const auto& path : every_page())
        pages[path] = help_page(path, "80").out;
    std::size_t examples = 0;
    for (const auto& [page_path, page] : pages)
        for (const std::string& example : examples_of(page)) {
            ++examples;
            BOOST_TEST_CONTEXT(example) {
                std::vector<std::string> words = words_of(example.substr(0, example.find(" > ")));
                BOOST_TEST_REQUIRE(words.front() == "loaderlens");
                words.erase(words.begin());
                const auto dashes = std::find(words.begin(), words.end(), "--");
                std::vector<std::string> path;
                std::set<std::string> known = options_of(pages[path]);
                for (auto word = words.begin(); word != dashes; ++word) {
                    std::vector<std::string> below = path;
                    below.push_back(*word);
                    if (pages.count(below)) {
                        path = below;
                        known.merge(options_of(pages[path]));
                    }
                }
                for (auto word = words.begin(); word != dashes; ++word)
                    if (word->starts_with('-'))
                        BOOST_TEST(known.count(word->substr(0, word->find('='))) == 1,
                                   *word << " is not an option of loaderlens " << joined(path));
                words.insert(dashes, "--help");
                std::vector<std::string> argv{cli_path()};
                argv.insert(argv.end(), words.begin(), words.end());
                const RunResult parsed = run(argv);
                BOOST_TEST(parsed.exit_code == 0, parsed.err);
                BOOST_TEST(parsed.out.find("Usage: loaderlens") != std::string::npos);
            }
        }
    BOOST_TEST(examples >= 20u);
}

BOOST_AUTO_TEST_CASE(every_command_has_a_man_page_that_renders, *LOADERLENS_MAY_SKIP) {
    const std::filesystem::path man = build_dir() / "man";
    if (!precondition(std::filesystem::exists(man / "loaderlens.1"),
                      "no man pages in " + man.string() + " (help2man missing at build time)",
                      InCi::must_have))
        return;
    std::vector<std::string> pages{"loaderlens"};
    for (const auto& path : every_page())
        if (path.size() == 1) pages.push_back("loaderlens-" + path.front());
    if (std::filesystem::exists(build_dir() / "gui" / "loaderlens-gui"))
        pages.push_back("loaderlens-gui");
    for (const std::string& page : pages) {
        BOOST_TEST_CONTEXT(page) {
            const std::string file = (man / (page + ".1")).string();
            BOOST_TEST(std::filesystem::exists(file + ".gz"));
            const RunResult shown = run({"env", "MANWIDTH=80", "man", "-l", file});
            BOOST_TEST(shown.exit_code == 0, shown.err);
            BOOST_TEST(shown.err.empty());
            const std::string text = joined(words_of(shown.out));
            BOOST_TEST(text.find("NAME " + page + " - ") != std::string::npos);
            BOOST_TEST(text.find("SYNOPSIS") != std::string::npos);
            BOOST_TEST(text.find("EXAMPLES loaderlens") != std::string::npos);
            BOOST_TEST(text.find("SEE ALSO") != std::string::npos);
            // Only these sections: a help line help2man took for a section's name
            // ("[Option Group: Sampling]") made one of its own. And no run-on paragraph: a
            // help text once kept its rest as one 4,000-character line of the page.
            const std::set<std::string> sections{"NAME",     "SYNOPSIS", "DESCRIPTION", "OPTIONS",
                                                 "COMMANDS", "EXAMPLES", "\"SEE ALSO\""};
            std::ifstream source(file);
            std::string line;
            while (std::getline(source, line)) {
                if (line.starts_with(".SH "))
                    BOOST_TEST(sections.contains(line.substr(4)), "section " << line);
                BOOST_TEST(line.size() <= 200u,
                           "a line of " << line.size() << " bytes: " << line.substr(0, 120));
            }
        }
    }
}

// The script is written from the option tree at build time; the oracle is each help page.
BOOST_AUTO_TEST_CASE(completion_offers_every_command_and_option) {
    const std::string script = (build_dir() / "completion" / "loaderlens").string();
    std::ifstream in(script);
    const std::string written{std::istreambuf_iterator<char>(in), {}};
    BOOST_TEST(written == run({cli_path(), "completion", "bash"}).out, script << " is stale");
    for (const auto& path : every_page()) {
        std::vector<std::string> words{"loaderlens"};
        words.insert(words.end(), path.begin(), path.end());
        const std::string page = help_page(path, "80").out;
        BOOST_TEST_CONTEXT(joined(words)) {
            std::vector<std::string> names = subcommands_of(page);
            words.push_back("");
            const std::set<std::string> offered = completed(words, false);
            for (const std::string& name : names)
                BOOST_TEST(offered.count(name) == 1, name << " not offered");
            words.back() = "-";
            BOOST_TEST(completed(words, false) == options_of(page));
        }
    }
    check_completion(false);
}

BOOST_AUTO_TEST_CASE(completion_with_bash_completion_loaded, *LOADERLENS_MAY_SKIP) {
    if (!precondition(std::filesystem::exists("/usr/share/bash-completion/bash_completion"),
                      "bash-completion is not installed", InCi::must_have))
        return;
    check_completion(true);
}

BOOST_AUTO_TEST_SUITE_END()
