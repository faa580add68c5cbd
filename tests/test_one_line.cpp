// SPDX-License-Identifier: MIT
// one_line(): how every text output and error line prints a name from outside (a file name, a
// command line, a marker). Control characters escaped so that a name can neither break the
// output's lines nor drive the terminal; ill-formed UTF-8 replaced as the JSON outputs and the
// dashboard replace it, so that a name reads the same everywhere. The oracles for the
// replacement: Python's bytes.decode("utf-8", "replace") and nlohmann::json's dump with
// error_handler::replace, neither of which shares this code.
#include "loaderlens/one_line.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// Bytes, ill-formed in the ways Unicode's table 3-7 names: a lone continuation byte, an
// overlong form, a surrogate, above U+10FFFF, a sequence cut short (at the end and before an
// ASCII byte), bytes no UTF-8 has.
const std::vector<std::string> ill_formed = {
    "me\xff.npy",
    "a\x80"
    "b",
    "\xc0\xaf",
    "\xe0\x80\xaf",
    "\xed\xa0\x80",
    "\xf4\x90\x80\x80",
    "\xe2\x82",
    "\xe2\x82x",
    "\xf0\x9f\x99",
    "\xf5\x80",
    "\xf0\x9f\x99\x82\xff",
    "ok\xe2\x82\xacok\xc3",
};

std::string hex_of(const std::string& bytes) {
    std::string out;
    for (const char c : bytes)
        out += fmt::format("{:02x}", static_cast<unsigned char>(c));
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(one_line_text)

BOOST_AUTO_TEST_CASE(control_characters_are_escaped) {
    BOOST_TEST(one_line("a\nb\tc") == "a\\nb\\tc");
    BOOST_TEST(one_line("\x1b[31mred\x07\r\x7f") == "\\x1b[31mred\\x07\\x0d\\x7f");
    // C1 controls: U+009B is CSI to a terminal that obeys C1 in UTF-8.
    BOOST_TEST(one_line("x\xc2\x9b"
                        "31m\xc2\x85") == "x\\u009b31m\\u0085");
    BOOST_TEST(one_line(std::string("nul\0byte", 8)) == "nul\\x00byte");
}

BOOST_AUTO_TEST_CASE(well_formed_utf8_reads_as_it_is) {
    for (const std::string text :
         {"/data/train.npy", "caf\xc3\xa9 \xe6\x95\xb0\xe6\x8d\xae \xf0\x9f\x99\x82",
          "nbsp\xc2\xa0ok", "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"})
        BOOST_TEST(one_line(text) == text, hex_of(text));
}

BOOST_AUTO_TEST_CASE(ill_formed_utf8_is_replaced_as_python_replaces_it) {
    std::string script = "import sys\nfor h in sys.argv[1:]:\n"
                         "    sys.stdout.write(bytes.fromhex(h).decode('utf-8', 'replace') + "
                         "'\\n')\n";
    std::vector<std::string> argv{"/usr/bin/python3", "-c", script};
    for (const std::string& bytes : ill_formed)
        argv.push_back(hex_of(bytes));
    const RunResult python = run(argv);
    BOOST_REQUIRE_MESSAGE(python.exit_code == 0, python.err);
    std::istringstream lines(python.out);
    for (const std::string& bytes : ill_formed) {
        std::string expected;
        BOOST_REQUIRE(std::getline(lines, expected));
        BOOST_TEST(one_line(bytes) == expected, hex_of(bytes));
    }
}

BOOST_AUTO_TEST_CASE(ill_formed_utf8_is_replaced_as_report_json_replaces_it) {
    for (const std::string& bytes : ill_formed) {
        const std::string dumped =
            nlohmann::json(bytes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        BOOST_TEST(one_line(bytes) == nlohmann::json::parse(dumped).get<std::string>(),
                   hex_of(bytes));
    }
}

BOOST_AUTO_TEST_SUITE_END()
