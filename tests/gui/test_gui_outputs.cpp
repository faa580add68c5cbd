// SPDX-License-Identifier: MIT
// loaderlens-gui --screenshot under the one output rule (loaderlens/output_rule.hpp): never the
// recording it shows (through any name, or its -wal), never through a symbolic link, never a
// FIFO; a recording `report` refuses is refused at once with report's line; and a recording's
// texts are bounded before Qt lays them out. In the gui_window suite: run offscreen and again
// under Xvfb (tests/gui/under_xvfb.sh).
#include "display_text.hpp"
#include "main_window.hpp"
#include "support.hpp"
#include "view_export.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace loaderlens;
using namespace loaderlens::test;
using loaderlens::gui::export_view_to;
using loaderlens::gui::MainWindow;
namespace fs = std::filesystem;

namespace {

std::string gui_binary() {
    return LOADERLENS_GUI_PATH;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The lines the GUI itself wrote (Qt may add its own, about XDG_RUNTIME_DIR).
std::vector<std::string> own_lines(const std::string& err) {
    std::vector<std::string> out;
    for (const std::string& line : lines_of(err))
        if (line.rfind("loaderlens-gui: ", 0) == 0) out.push_back(line);
    return out;
}

std::string small_recording(const TempDir& dir, const std::string& name) {
    const std::string path = dir.file(name);
    const RunResult made = run({cli_path(), "record", "-q", "-o", path, "--", "true"});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    return path;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gui_window)

// N5: `--screenshot run.db run.db` wrote a PNG over the recording; through a symbolic link it
// wrote the link's target; a FIFO made it hang.
BOOST_AUTO_TEST_CASE(screenshot_never_writes_an_input_a_link_or_a_fifo) {
    TempDir dir;
    const std::string rec = small_recording(dir, "run.db"), content = slurp(rec);
    const std::string victim = dir.file("victim.txt");
    std::ofstream(victim) << "not the GUI's\n";
    fs::create_hard_link(rec, dir.file("hard.db"));
    fs::create_symlink(rec, dir.file("link.db"));
    fs::create_symlink(victim, dir.file("elsewhere.png"));
    fs::create_symlink(victim, dir.file("shot-overview.png")); // what --view all writes first
    fs::create_directory_symlink(dir.path(), dir.file("via"));
    BOOST_REQUIRE(::mkfifo(dir.file("fifo.png").c_str(), 0644) == 0);
    const std::vector<std::vector<std::string>> cases{
        {rec},
        {rec + "-wal"},
        {dir.file("hard.db")},
        {dir.file("link.db")},
        {dir.file("via/run.db")},
        {dir.file("elsewhere.png")},
        {dir.file("fifo.png")},
        {dir.file("shot.png"), "--view", "all"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{gui_binary(), "--screenshot"};
        argv.insert(argv.end(), c.begin(), c.end());
        argv.push_back(rec);
        const RunResult r = run(argv, std::chrono::seconds(30));
        BOOST_TEST_CONTEXT(c.front()) {
            BOOST_TEST(r.exit_code == 2, r.err);
            BOOST_TEST(own_lines(r.err).size() == 1u, r.err);
            BOOST_TEST(r.err.find("--screenshot") != std::string::npos, r.err);
            BOOST_TEST(slurp(rec) == content);
            BOOST_TEST(slurp(victim) == "not the GUI's\n");
            BOOST_TEST(!fs::exists(rec + "-wal"));
        }
    }
    struct stat st {};
    BOOST_TEST((::lstat(dir.file("fifo.png").c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
    // A plain new name is written, whole.
    const RunResult ok =
        run({gui_binary(), "--screenshot", dir.file("ok.png"), rec}, std::chrono::seconds(60));
    BOOST_TEST(ok.exit_code == 0, ok.err);
    BOOST_TEST(slurp(dir.file("ok.png")).starts_with("\x89PNG"));
}

// N9: a start_unix_ns that is no number held --screenshot for its full 120 s wait before exit 2.
// Refused at once now, with the line `report` prints.
BOOST_AUTO_TEST_CASE(screenshot_refuses_what_report_refuses_at_once) {
    TempDir dir;
    const std::string rec = small_recording(dir, "bad.db");
    sqlite_exec(rec, "UPDATE meta SET value = 'abc' WHERE key = 'start_unix_ns'");
    const RunResult report = run({cli_path(), "report", rec});
    BOOST_REQUIRE_EQUAL(report.exit_code, 2);
    const auto started = std::chrono::steady_clock::now();
    const RunResult r =
        run({gui_binary(), "--screenshot", dir.file("out.png"), rec}, std::chrono::seconds(30));
    const auto took = std::chrono::steady_clock::now() - started;
    BOOST_TEST(r.exit_code == 2, r.err);
    BOOST_TEST(took < std::chrono::seconds(20));
    const auto lines = own_lines(r.err);
    BOOST_REQUIRE_EQUAL(lines.size(), 1u);
    const std::string reason = report.err.substr(std::string("loaderlens: ").size());
    BOOST_TEST(lines[0] + "\n" == "loaderlens-gui: " + reason, r.err << " vs " << report.err);
    BOOST_TEST(!fs::exists(dir.file("out.png")));
}

// N9: a meta host of 100,000 characters took the GUI to 13 GB in 120 s (report: 0.01 s). Every
// text from a recording is bounded before Qt lays it out.
BOOST_AUTO_TEST_CASE(a_huge_text_in_a_recording_is_bounded) {
    const QString shown = gui::recorded_text(std::string(100000, 'h') + "\n\x1b[2J");
    BOOST_TEST(shown.size() <= gui::recorded_text_chars + 20);
    BOOST_TEST(!shown.contains('\n'));
    BOOST_TEST(gui::recorded_text("node\n2") == QString("node\\n2"));
    TempDir dir;
    const std::string rec = small_recording(dir, "host.db");
    sqlite_exec(rec, "UPDATE meta SET value = printf('%.*c', 100000, 'h') WHERE key = 'host'");
    sqlite_exec(rec, "UPDATE meta SET value = printf('%.*c', 100000, 'c') WHERE key = 'command'");
    const RunResult r =
        run({gui_binary(), "--screenshot", dir.file("host.png"), rec}, std::chrono::seconds(60));
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(slurp(dir.file("host.png")).starts_with("\x89PNG"));
}

// File > Export view follows the same rule: never the recording shown (nor its -wal), never
// through a link; a new name is written.
BOOST_AUTO_TEST_CASE(export_view_never_writes_the_recording) {
    TempDir dir;
    const std::string rec = small_recording(dir, "run.db"), content = slurp(rec);
    const std::string victim = dir.file("victim.txt");
    std::ofstream(victim) << "not the GUI's\n";
    fs::create_symlink(rec, dir.file("link.png"));
    fs::create_symlink(victim, dir.file("elsewhere.svg"));
    MainWindow window(false);
    BOOST_REQUIRE(window.open_now(QString::fromStdString(rec)));
    window.resize(800, 600);
    window.show();
    window.show_view("overview");
    window.refresh_now();
    const QString shown = QString::fromStdString(rec);
    for (const std::string& out : {rec + "-wal", dir.file("link.png"), dir.file("elsewhere.svg")}) {
        QString error;
        BOOST_TEST(
            !export_view_to(window.view("overview"), QString::fromStdString(out), &error, shown),
            out);
        BOOST_TEST(error.contains(QString::fromStdString(out)), error.toStdString());
    }
    QString error;
    BOOST_TEST(export_view_to(window.view("overview"), QString::fromStdString(dir.file("ok.pdf")),
                              &error, shown),
               error.toStdString());
    BOOST_TEST(slurp(dir.file("ok.pdf")).starts_with("%PDF"));
    BOOST_TEST(slurp(rec) == content);
    BOOST_TEST(slurp(victim) == "not the GUI's\n");
    BOOST_TEST(!fs::exists(rec + "-wal"));
}

BOOST_AUTO_TEST_SUITE_END()
