// SPDX-License-Identifier: MIT
// `check --budget`'s limits on the file itself (docs/check.md, "Limits"): nesting deeper than 16
// levels and files over 1 MiB are refused in one line FILE:LINE before toml++ reads them (its
// recursive parser overflowed the stack on 30,000 nested dotted keys: tester's N10), while dots
// and brackets in strings and comments are not nesting. A generator draws nesting of known depth
// in every form TOML has, dressed with such strings and comments, at a known line.
#include "fuzz_random.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>

using namespace loaderlens::test;

namespace {

constexpr int limit = 16; // cli/budget_file.hpp max_budget_nesting

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string repeated(const std::string& text, int times) {
    std::string out;
    for (int i = 0; i < times; ++i)
        out += text;
    return out;
}

// check with `budget` against a recording it never reaches: the budget is read first.
RunResult check_with(const TempDir& dir, const std::string& budget) {
    const std::string recording = dir.file("never-read.db");
    write_text(recording, "");
    return run({cli_path(), "check", "--budget", budget, recording});
}

void require_refused(const TempDir& dir, const std::string& name, const std::string& text,
                     const std::string& expected) {
    const std::string path = dir.file(name);
    write_text(path, text);
    const RunResult r = check_with(dir, path);
    BOOST_TEST_CONTEXT(name + ": " + r.err.substr(0, 300)) {
        BOOST_TEST(r.exit_code == 2);
        BOOST_TEST(lines_of(r.err).size() == 1u);
        BOOST_TEST(r.err.starts_with("loaderlens: " + path + expected));
        BOOST_TEST(r.out.empty());
    }
}

const std::string too_deep = ": nested deeper than 16 levels";

} // namespace

BOOST_AUTO_TEST_SUITE(budget_limits)

// The tester's files, and the same nesting ten times deeper (toml++ 3.3.0 crashed on both before
// the pre-scan: the first under the tester's build, the second here under -O2 too).
BOOST_AUTO_TEST_CASE(deep_nesting_is_refused_before_toml_reads_it) {
    TempDir dir;
    for (int n : {30'000, 300'000}) {
        const std::string s = std::to_string(n);
        require_refused(dir, "dotted" + s + ".toml", "a" + repeated(".a", n) + " = 1\n",
                        ":1" + too_deep);
        require_refused(dir, "header" + s + ".toml", "# deep\n[a" + repeated(".a", n) + "]\n",
                        ":2" + too_deep);
        require_refused(dir, "arrays" + s + ".toml",
                        "[check]\n\nx = " + repeated("[", n) + repeated("]", n) + "\n",
                        ":3" + too_deep);
        const int braces = std::min(n, 100'000); // "{ b = " and "}": under 1 MiB
        require_refused(dir, "inline" + s + ".toml",
                        "x = " + repeated("{ b = ", braces) + "1" + repeated("}", braces) + "\n",
                        ":1" + too_deep);
    }
    // Nesting spread over lines: one header per depth, the line where it passes the limit.
    std::string headers;
    for (int depth = 1; depth <= limit + 3; ++depth)
        headers += "[a" + repeated(".a", depth - 1) + "]\n";
    require_refused(dir, "headers.toml", headers, ":" + std::to_string(limit + 1) + too_deep);
    // An array that opens over many lines.
    require_refused(dir, "lines.toml", "x = [\n" + repeated("[ # a comment ]]]]\n", 40),
                    ":" + std::to_string(limit) + too_deep);
}

BOOST_AUTO_TEST_CASE(dots_and_brackets_in_strings_and_comments_are_not_nesting) {
    TempDir dir;
    const std::string dots = repeated(".a", 40), opens = repeated("[{", 40);
    const std::string text = "# " + dots + opens + "\n[findings] # " + opens + "\nforbid = [\"" +
                             dots + opens + "\", 'x" + opens + dots + "', \"\\\"" + opens +
                             "\"] # ]]]]\n" + "\"a" + dots + "\".'b" + dots + "' = \"\"\"\n" +
                             opens + "\n" + dots + "\"\"\"\n" + "c = '''" + opens + "\n'''\n[\"" +
                             dots + "\"]\n";
    const std::string path = dir.file("strings.toml");
    write_text(path, text);
    const RunResult r = check_with(dir, path);
    BOOST_TEST_INFO(r.err);
    BOOST_TEST(r.exit_code == 2); // the schema's own complaint, from toml++'s reading of it
    BOOST_TEST(r.err.find("nested deeper") == std::string::npos);
    BOOST_TEST(r.err.find(": unknown key") != std::string::npos); // valid TOML, read in full
    // The schema's deepest forms, inline, pass the scan: the example budget is read in full.
    const std::string inline_path = dir.file("inline.toml");
    write_text(inline_path, "process = [{ role = \"worker\", rss = \"1GiB\" }]\n"
                            "findings = { forbid = [\"anon_leak\"] }\n");
    const RunResult ok = check_with(dir, inline_path);
    BOOST_TEST(ok.err.find("never-read.db") != std::string::npos); // past the budget
}

BOOST_AUTO_TEST_CASE(a_file_over_1_mib_is_refused) {
    TempDir dir;
    const std::string line = "# " + std::string(1021, 'x') + "\n"; // 1 KiB
    require_refused(dir, "large.toml", repeated(line, 1024) + "x = 1\n",
                    ": larger than 1 MiB, too large for a budget file");
    // At 1 MiB exactly it is read (and found wanting by the schema, not by its size).
    const std::string path = dir.file("mib.toml");
    write_text(path, repeated(line, 1023) + "[check]\n" + "# " + std::string(1013, 'x') + "\n");
    BOOST_REQUIRE_EQUAL(std::filesystem::file_size(path), std::uintmax_t{1} << 20);
    const RunResult r = check_with(dir, path);
    BOOST_TEST(r.err.find("larger than") == std::string::npos);
    BOOST_TEST(r.err.find("no rules") != std::string::npos);
    // A device that never ends is cut at the limit, not read forever.
    const RunResult zero = check_with(dir, "/dev/zero");
    BOOST_TEST(zero.exit_code == 2);
    BOOST_TEST(zero.err.find("larger than 1 MiB") != std::string::npos);
}

// Nesting of a drawn depth in a drawn form, after filler lines that hold multi-line strings and
// comments full of brackets: refused at its line exactly when deeper than the limit, else read by
// toml++ (whose complaint, if any, is about the schema). Never a crash, always one line.
BOOST_AUTO_TEST_CASE(generated_nesting_is_refused_exactly_past_the_limit) {
    TempDir dir;
    for (std::uint64_t seed : fuzz_seeds({1, 2})) {
        for (std::size_t index = 0; index < 60; ++index) {
            FuzzRandom random = FuzzRandom::for_case(seed, index);
            std::string text;
            int line = 1;
            bool in_table = false; // the key below is in the filler's [check] unless a header
            for (auto filler = random.below(4); filler-- > 0;) {
                switch (random.below(3)) {
                case 0:
                    text += "# [[a.b.c]] {{{ \"\n", line += 1;
                    break;
                case 1:
                    text += "[check]\nx = \"\"\"\n[[[.a.b\n]]]\"\"\"\n", line += 4;
                    in_table = true;
                    break;
                default:
                    text += "y = ['[', \"]]\", '{.}'] # ]\n", line += 1;
                    break;
                }
            }
            const int drawn = static_cast<int>(random.between(1, 2 * limit));
            // The deep construct: a header of h segments (+1 for [[ ]]), then a key of k
            // segments holding a value nested in arrays and inline tables (each `{ k = `: 2).
            int left = drawn;
            const bool array_header = random.percent(30) && left >= 3;
            int h = array_header ? static_cast<int>(random.between(1, left - 2)) : 0;
            if (!array_header && random.percent(50) && left >= 2)
                h = static_cast<int>(random.between(1, left - 1));
            left -= h + (array_header ? 1 : 0);
            const int k = static_cast<int>(random.between(1, left));
            left -= k;
            std::string open, close;
            while (left > 0) {
                if (left >= 2 && random.percent(40)) {
                    open += random.percent(50) ? "{ 'k.]' = " : "{ \"z[\" = ", close = " }" + close;
                    left -= 2;
                } else {
                    open += random.percent(50) ? "[ " : "[\"]\", ", close = " ]" + close;
                    left -= 1;
                }
            }
            auto dotted = [&random](int segments) {
                std::string key = random.percent(50) ? "\"q.[x\"" : "p";
                for (int i = 1; i < segments; ++i)
                    key += random.percent(30) ? " . 'r.]'" : ".s";
                return key;
            };
            if (h > 0) {
                text += (array_header ? "[[" : "[") + dotted(h) + (array_header ? "]]" : "]") +
                        " # ]]\n";
                ++line;
            }
            text += dotted(k) + " = " + open + "1" + close + " # [[\n";
            const int depth = drawn + (h == 0 && in_table ? 1 : 0);
            const std::string path = dir.file("case.toml");
            write_text(path, text);
            const RunResult r = check_with(dir, path);
            // Refused on the header's line when the header alone is too deep.
            const int at = h + (array_header ? 1 : 0) > limit ? line - 1 : line;
            BOOST_TEST_CONTEXT("seed " << seed_text(seed) << " case " << index << " depth " << depth
                                       << ":\n"
                                       << text << "-> " << r.err) {
                BOOST_TEST(r.exit_code == 2);
                BOOST_TEST(lines_of(r.err).size() == 1u);
                const bool refused = r.err.find(too_deep) != std::string::npos;
                BOOST_TEST(refused == (depth > limit));
                if (depth > limit)
                    BOOST_TEST(r.err.starts_with("loaderlens: " + path + ":" + std::to_string(at) +
                                                 too_deep));
            }
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
