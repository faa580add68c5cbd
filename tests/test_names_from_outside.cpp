// SPDX-License-Identifier: MIT
// A name from outside in every output: a recorded tree maps a data file whose name holds a
// newline, ESC (a terminal's escape sequence), a C1 control and a byte that is not UTF-8, and the
// recording's own name holds that byte too. The text outputs print it as one line that cannot
// drive a terminal; report --json holds it as JSON can (U+FFFD for the byte); check's JUnit file
// stays well-formed XML. The oracles: the bytes of the outputs, Python's json and xml.etree.
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace loaderlens::test;

namespace {

// Control bytes a terminal obeys: C0 but newline, DEL, and C1 as UTF-8 (U+0080 to U+009F).
std::string controls_in(const std::string& text) {
    std::string found;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        const bool c1 = c == 0xc2 && i + 1 < text.size() &&
                        static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                        static_cast<unsigned char>(text[i + 1]) < 0xa0;
        if ((c < 0x20 && c != '\n') || c == 0x7f || c1)
            found += "byte " + std::to_string(c) + " at " + std::to_string(i) + "; ";
    }
    return found;
}

} // namespace

BOOST_AUTO_TEST_SUITE(names_from_outside)

BOOST_AUTO_TEST_CASE(a_hostile_file_name_is_one_line_everywhere) {
    TempDir dir;
    const std::string name = "evil\n\x1b[2J\xc2\x9b"
                             "31m\xff.raw";
    const std::string data = dir.file(name), recording = dir.file("run\xff.db");
    make_file(data, 4 << 20);
    std::vector<std::string> argv{cli_path(),   "record",       "-q",         "-o", recording,
                                  "--interval", "rollup=250ms", "maps=250ms", "--"};
    for (const std::string& word : workload(data, 2, 1, 1, 800))
        argv.push_back(word);
    const RunResult recorded = run(argv, std::chrono::seconds(60));
    BOOST_REQUIRE_MESSAGE(recorded.exit_code == 0, recorded.err);

    const RunResult text = run({cli_path(), "report", recording});
    BOOST_REQUIRE_MESSAGE(text.exit_code == 0, text.err);
    BOOST_TEST(controls_in(text.out).empty(), controls_in(text.out));
    const std::string shown = "evil\\n\\x1b[2J\\u009b31m\xef\xbf\xbd.raw";
    BOOST_TEST(text.out.find("  " + dir.path().string() + "/" + shown + "  (") != std::string::npos,
               "the mapped file as one line: " << text.out);

    const RunResult json_out = run({cli_path(), "report", "--json", recording});
    BOOST_REQUIRE_MESSAGE(json_out.exit_code == 0, json_out.err);
    const auto report = nlohmann::json::parse(json_out.out);
    bool listed = false;
    for (const auto& f : report["files"])
        listed |= f["path"] == dir.path().string() + "/evil\n\x1b[2J\xc2\x9b"
                                                     "31m\xef\xbf\xbd.raw";
    BOOST_TEST(listed, "the mapped file in report --json");

    const std::string budget = dir.file("b.toml"), junit = dir.file("out.xml");
    std::ofstream(budget) << "[[file]]\npath = \"evil*\"\nrss = \"1GiB\"\n";
    const RunResult checked =
        run({cli_path(), "check", "--budget", budget, "--junit", junit, recording});
    BOOST_TEST_INFO(checked.out + checked.err);
    BOOST_TEST(checked.exit_code == 0);
    BOOST_TEST(controls_in(checked.out).empty(), controls_in(checked.out));
    // Python's XML parser refuses a file that is not well-formed UTF-8.
    const RunResult parsed = run({"/usr/bin/python3", "-c",
                                  "import sys, xml.etree.ElementTree as E\n"
                                  "root = E.parse(sys.argv[1]).getroot()\n"
                                  "print(len(root.findall('.//testcase')))\n",
                                  junit});
    BOOST_TEST(parsed.exit_code == 0, "JUnit not well-formed: " << parsed.err);
    BOOST_TEST(parsed.out == "1\n");
}

BOOST_AUTO_TEST_SUITE_END()
