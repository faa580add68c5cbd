// SPDX-License-Identifier: MIT
// Helpers of the metrics tests (test_openmetrics, test_metrics_textfile): the recorded workload,
// promtool, the JSON export's figures, the kernel's RSS.
#pragma once

#include "exposition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

namespace loaderlens::test {

constexpr long double mib = 1024.0L * 1024.0L;

inline bool has_promtool() {
    return run({"/bin/sh", "-c", "command -v promtool"}).exit_code == 0;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

inline nlohmann::json run_json(const std::vector<std::string>& argv) {
    const RunResult r = run(argv);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return nlohmann::json::parse(r.out);
}

// The test workload under `record`: 2 workers each map a 32 MiB file (touched) and write 8 MiB.
inline std::vector<std::string> record_argv(const TempDir& dir, const std::string& out,
                                            std::vector<std::string> options, long hold_ms) {
    const std::string data = dir.file("data.bin");
    if (!std::filesystem::exists(data)) make_file(data, 32 << 20);
    std::vector<std::string> argv{cli_path(),     "record", "-q", "--interval",
                                  "rollup=250ms", "-o",     out};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    for (const std::string& word : workload(data, 2, 8, 1, hold_ms))
        argv.push_back(word);
    return argv;
}

// A figure of the JSON in bytes, or nothing for null.
inline std::optional<long double> json_bytes(const nlohmann::json& kib) {
    if (kib.is_null()) return std::nullopt;
    return kib.get<std::int64_t>() * 1024.0L;
}

// The tree sums of the last tick, as `export --format json` has them.
inline void require_tree_sums(const Exposition& e, const nlohmann::json& exported) {
    for (const char* figure : {"rss", "pss", "uss"}) {
        const nlohmann::json& points = exported["tree"][figure];
        BOOST_REQUIRE(!points.empty());
        const auto want = json_bytes(points.back()["kib"]);
        const auto got = e.value(std::string("loaderlens_tree_") + figure + "_bytes");
        BOOST_TEST(got == want,
                   figure << ": " << (got ? *got : -1) << " vs " << (want ? *want : -1));
    }
}

inline std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    std::istringstream in(
        read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
    for (pid_t child; in >> child;)
        out.push_back(child);
    return out;
}

inline long double kernel_rss(pid_t pid) {
    std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/statm"));
    long double size = 0, resident = 0;
    in >> size >> resident;
    return resident * static_cast<long double>(sysconf(_SC_PAGESIZE));
}

inline bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

} // namespace loaderlens::test

// So that a failing BOOST_TEST on a figure prints it ("absent": no such series).
template <> struct boost::test_tools::tt_detail::print_log_value<std::optional<long double>> {
    void operator()(std::ostream& out, const std::optional<long double>& value) {
        if (value)
            out << std::fixed << std::setprecision(0) << *value;
        else
            out << "absent";
    }
};
