// SPDX-License-Identifier: MIT
// The text report on a terminal: its first 24 lines answer (the verdict, what each scheduler
// counts, who held the most of it at its peak), every line fits the width it is given, colour
// only on a terminal. The demo's run (scripts/demo.sh), smaller; the largest holders are checked
// against the recording's rows summed by SQLite through Python, not by the code under test.
#include "loaderlens/units.hpp"
#include "support.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

std::size_t columns_of(const std::string& line) {
    std::size_t n = 0;
    for (unsigned char c : line)
        n += (c & 0xC0) != 0x80; // count code points: Σ and ▁ are one column each
    return n;
}

// The demo's replay: 4 workers re-forked each epoch, 2 epochs, residency sampled.
struct DemoRecording {
    TempDir dir;
    std::string db = dir.file("demo.db");
    DemoRecording() {
        const std::string data = dir.file("images.npy");
        BOOST_REQUIRE(run({cli_path(), "mkdata", "npy", data, "--count", "512", "--shape",
                           "3x64x64", "--dtype", "f4"})
                          .exit_code == 0);
        const RunResult r = run({cli_path(), "replay", data, "--workers", "4", "--batch", "32",
                                 "--epochs", "2", "--step-time", "20ms", "--epoch-pause", "500ms",
                                 "--interval", "residency=250ms", "--force", "-o", db},
                                std::chrono::seconds(120));
        BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    }
};

std::string line_with(const std::vector<std::string>& lines, const std::string& start) {
    for (const std::string& line : lines)
        if (line.starts_with(start)) return line;
    return {};
}

std::string report_at(const std::string& db, const std::vector<std::string>& env,
                      const std::vector<std::string>& options = {}) {
    std::vector<std::string> argv{"/usr/bin/env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {cli_path(), "report", db});
    argv.insert(argv.end(), options.begin(), options.end());
    const RunResult r = run(argv);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(report_layout)

BOOST_AUTO_TEST_CASE(first_screen_of_the_demo_answers) {
    DemoRecording demo;
    const std::string text = report_at(demo.db, {"COLUMNS=80"});
    const std::vector<std::string> lines = lines_of(text);
    for (const std::string& line : lines)
        BOOST_TEST(columns_of(line) <= 80u, "wider than 80: " << line);
    BOOST_TEST(text.find('\x1b') == std::string::npos); // a pipe: no colour
    BOOST_REQUIRE(lines.size() > 24u);
    const std::vector<std::string> screen(lines.begin(), lines.begin() + 24);
    std::string first;
    for (const std::string& line : screen)
        first += line + "\n";

    const auto json = nlohmann::json::parse(run({cli_path(), "report", "--json", demo.db}).out);
    BOOST_TEST(first.find("\nVerdict") != std::string::npos);
    // The most severe finding's title (its first words: the rest may wrap).
    if (!json["findings"].empty()) {
        const std::string title = json["findings"][0]["title"];
        BOOST_TEST(first.find(title.substr(0, 40)) != std::string::npos, first);
    }
    // Every scheduler view, with its counted figure.
    const std::map<std::string, std::string> names{{"slurm_linux", "SLURM linux: Σ RSS"},
                                                   {"slurm_usepss", "SLURM UsePss: Σ PSS"},
                                                   {"slurm_noshared", "SLURM NoShared: Σ anon"},
                                                   {"slurm_cgroup", "SLURM cgroup"},
                                                   {"cgroup_usage", "cgroup usage"},
                                                   {"k8s_working_set", "Kubernetes working set"}};
    for (const auto& view : json["schedulers"]) {
        const std::string row = line_with(screen, "  " + names.at(view["key"]));
        BOOST_TEST(!row.empty(), "no row for " << view["key"] << " in\n" << first);
        if (view["counted_kib"].is_number())
            BOOST_TEST(row.find(format_kib(view["counted_kib"].get<std::int64_t>())) !=
                           std::string::npos,
                       row);
    }

    // The largest holder of Σ RSS at its peak tick, summed by SQLite: main, a worker slot, or
    // helpers, as the rows of the fast tier have them.
    const auto peak = sqlite_rows(demo.db, "SELECT t_ms FROM fast_samples GROUP BY t_ms "
                                           "ORDER BY SUM(rss_kb) DESC, t_ms LIMIT 1");
    BOOST_REQUIRE(peak.size() == 1u);
    const auto lanes =
        sqlite_rows(demo.db, "SELECT p.role, p.slot, SUM(f.rss_kb) AS kb "
                             "FROM fast_samples f JOIN processes p ON p.id = f.process_id "
                             "WHERE f.t_ms = " +
                                 peak[0][0] +
                                 " AND f.rss_kb IS NOT NULL "
                                 "GROUP BY p.role, CASE p.role WHEN 'worker' THEN "
                                 "p.slot END ORDER BY kb DESC LIMIT 1");
    BOOST_REQUIRE(lanes.size() == 1u);
    const std::string lane = lanes[0][0] == "worker"   ? "worker " + lanes[0][1]
                             : lanes[0][0] == "helper" ? "helpers"
                                                       : lanes[0][0];
    const std::string rss_row = line_with(screen, "  SLURM linux: Σ RSS");
    BOOST_TEST(rss_row.find(lane + " " + format_kib(std::stoll(lanes[0][2]))) != std::string::npos,
               rss_row << " (SQLite: " << lane << " " << lanes[0][2] << " KiB)");

    // The cgroup's usage at its peak tick, by the largest of what memory.stat splits it into.
    const auto cgroup =
        sqlite_rows(demo.db, "SELECT anon_kb, active_file_kb, inactive_file_kb, "
                             "shmem_kb FROM cgroup_samples WHERE usage_kb IS NOT NULL "
                             "ORDER BY usage_kb DESC, t_ms LIMIT 1");
    if (!cgroup.empty() && cgroup[0][0] != "None") {
        const char* parts[] = {"anon", "active file", "inactive file", "shmem"};
        std::size_t largest = 0;
        for (std::size_t i = 1; i < 4; ++i)
            if (cgroup[0][i] != "None" && std::stoll(cgroup[0][i]) > std::stoll(cgroup[0][largest]))
                largest = i;
        const std::string row = line_with(screen, "  cgroup usage");
        BOOST_TEST(row.find(std::string(parts[largest]) + " " +
                            format_kib(std::stoll(cgroup[0][largest]))) != std::string::npos,
                   row);
    }
    // Who holds what, under the views.
    BOOST_TEST(first.find("Who holds what at the peak of") != std::string::npos, first);

    // Cut (as by SLURM's SIGKILL: no end written), judged as a UsePss site against a limit: a
    // notice under the title, a SITE column, margins. The screen still ends within 24 lines.
    const std::string cut = demo.dir.file("cut.db");
    std::filesystem::copy_file(demo.db, cut);
    sqlite_exec(cut, "UPDATE meta SET value = 'recording' WHERE key = 'state'");
    sqlite_exec(cut, "DELETE FROM meta WHERE key IN ('end_ms', 'exit_status', "
                     "'exit_status_source')");
    const std::vector<std::string> cut_lines = lines_of(
        report_at(cut, {"COLUMNS=80"}, {"--mem-limit", "300MiB", "--accounting", "usepss"}));
    BOOST_REQUIRE(cut_lines.size() > 25u);
    BOOST_TEST(cut_lines[1].starts_with("Recording cut"), cut_lines[1]);
    // The first screen ends with a blank line before the details ("Recording").
    const long screen_end = std::distance(
        cut_lines.begin(), std::find(cut_lines.begin(), cut_lines.end(), "Recording"));
    BOOST_TEST(screen_end <= 25, "the first screen took " << screen_end - 1 << " lines");
    for (const auto& view : json["schedulers"])
        BOOST_TEST(!line_with(cut_lines, "  KILLS   " + names.at(view["key"])).empty() +
                       !line_with(cut_lines, "  if      " + names.at(view["key"])).empty() ==
                   1);
    for (const std::string& line : cut_lines)
        BOOST_TEST(columns_of(line) <= 80u, "wider than 80: " << line);
}

BOOST_AUTO_TEST_CASE(width_and_colour) {
    DemoRecording demo;
    for (const char* width : {"60", "100", "132"}) {
        const std::string text = report_at(demo.db, {std::string("COLUMNS=") + width});
        for (const std::string& line : lines_of(text))
            BOOST_TEST(columns_of(line) <= std::stoul(width), width << ": " << line);
    }
    // --width before COLUMNS; 0 leaves every line whole (the recorded command is one line).
    const std::string whole = report_at(demo.db, {"COLUMNS=60"}, {"--width", "0"});
    const std::string command = line_with(lines_of(whole), "  command ");
    BOOST_TEST(command.find("--epochs 2") != std::string::npos);
    BOOST_TEST(command.find("images.npy") != std::string::npos);
    BOOST_TEST(columns_of(command) > 100u);

    // --color=always: the same text with SGR codes around headings and severities.
    const std::string plain = report_at(demo.db, {"COLUMNS=80"});
    const std::string colored = report_at(demo.db, {"COLUMNS=80"}, {"--color", "always"});
    BOOST_TEST(colored.find("\x1b[1m") != std::string::npos);
    std::string stripped;
    for (std::size_t i = 0; i < colored.size(); ++i) {
        if (colored[i] == '\x1b') {
            i = colored.find('m', i);
            continue;
        }
        stripped += colored[i];
    }
    BOOST_TEST(stripped == plain);

    // On a real terminal (script(1) gives the command a pty): colour by default, none with
    // NO_COLOR set, none with --color never.
    auto on_tty = [&](const std::string& env, const std::string& option) {
        const RunResult r = run(
            {"/usr/bin/script", "-qec",
             "env " + env + " " + cli_path() + " report " + option + " " + demo.db, "/dev/null"});
        BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        return r.out;
    };
    BOOST_TEST(on_tty("TERM=xterm COLUMNS=80", "").find("\x1b[1m") != std::string::npos);
    BOOST_TEST(on_tty("TERM=xterm COLUMNS=80 NO_COLOR=1", "").find("\x1b[") == std::string::npos);
    BOOST_TEST(on_tty("TERM=xterm COLUMNS=80", "--color never").find("\x1b[") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
