// SPDX-License-Identifier: MIT
// `loaderlens ps`: the processes one could record (`record --pid`), with the likely data-loader
// mains and their workers marked (docs/ps.md). Standard output is checked by main().
#include "commands.hpp"
#include "loaderlens/format_version.hpp"
#include "loaderlens/one_line.hpp"
#include "loaderlens/process_list.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <pwd.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <unordered_map>

namespace loaderlens::cli {

namespace {

struct PsOptions {
    bool all = false, loaders = false, json = false, wide = false;
    std::string user, interval = "250ms";
};

// The user ID of a name or number, or nothing when the password database has no such name.
std::optional<uid_t> uid_of(const std::string& user) {
    unsigned long number = 0;
    const char* end = user.data() + user.size();
    if (auto [stop, error] = std::from_chars(user.data(), end, number);
        !user.empty() && error == std::errc() && stop == end && number <= 0xfffffffeUL)
        return static_cast<uid_t>(number);
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    if (getpwnam_r(user.c_str(), &entry, buffer.data(), buffer.size(), &found) == 0 && found)
        return found->pw_uid;
    return std::nullopt;
}

// Columns the command may take: the terminal's, $COLUMNS, or 80 as ps does when it cannot tell;
// nothing (no limit) with --wide.
std::optional<std::size_t> output_width(bool wide) {
    if (wide) return std::nullopt;
    winsize size{};
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
        return size.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        std::size_t value = 0;
        const char* end = columns + std::strlen(columns);
        if (auto [stop, error] = std::from_chars(columns, end, value);
            error == std::errc() && stop == end && value >= 20 && value <= 100000)
            return value;
    }
    return 80;
}

// 812K, 81.5M, 812M, 3.2G: six columns at most.
std::string human_kib(const Kib& kib) {
    if (!kib) return "-";
    char text[32]; // room for any long long and a suffix
    const double value = static_cast<double>(*kib);
    if (*kib < 1024)
        std::snprintf(text, sizeof text, "%lldK", static_cast<long long>(*kib));
    else if (value < 100 * 1024.0)
        std::snprintf(text, sizeof text, "%.1fM", value / 1024);
    else if (value < 1024 * 1024.0)
        std::snprintf(text, sizeof text, "%.0fM", value / 1024);
    else if (value < 100 * 1024 * 1024.0)
        std::snprintf(text, sizeof text, "%.1fG", value / (1024 * 1024));
    else
        std::snprintf(text, sizeof text, "%.0fG", value / (1024 * 1024));
    return text;
}

std::string cpu_text(const std::optional<double>& percent) {
    if (!percent) return "-";
    char text[16];
    std::snprintf(text, sizeof text, *percent < 999.95 ? "%.1f" : "%.0f", *percent);
    return text;
}

std::string command_of(const ListedProcess& p) {
    // As ps shows them: a zombie has exited and its parent has not waited for it yet.
    if (p.argv.empty()) return "[" + one_line(p.comm) + "]" + (p.state == 'Z' ? " <defunct>" : "");
    std::string out;
    for (const std::string& word : p.argv)
        out += (out.empty() ? "" : " ") + one_line(word);
    return out;
}

std::string loader_text(const ListedProcess& p) {
    if (p.role == LoaderRole::main) return "main(" + std::to_string(p.workers.size()) + ")";
    if (p.role == LoaderRole::worker) return "worker";
    return "";
}

// `text` cut to `width` bytes, never inside a UTF-8 sequence.
std::string cut(std::string text, std::optional<std::size_t> width) {
    if (!width || text.size() <= *width) return text;
    std::size_t end = *width;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        --end;
    text.resize(end);
    return text;
}

std::string table_line(const ListedProcess& p, bool indented, std::optional<std::size_t> width) {
    std::string user = one_line(p.user);
    if (user.size() > 8) user = user.substr(0, 7) + "+"; // as ps marks a cut name
    char prefix[96];
    std::snprintf(prefix, sizeof prefix, "%7d %-8s %6s %5s %-9s ", static_cast<int>(p.pid),
                  user.c_str(), human_kib(p.res).c_str(), cpu_text(p.cpu_percent).c_str(),
                  loader_text(p).c_str());
    return cut(prefix + std::string(indented ? " \\_ " : "") + command_of(p), width);
}

nlohmann::json process_json(const ListedProcess& p) {
    nlohmann::json loader = nullptr;
    if (p.role != LoaderRole::none) {
        loader = {{"role", to_string(p.role)}, {"rule", to_string(p.rule)}};
        if (p.role == LoaderRole::main) loader["workers"] = p.workers;
        if (p.main != 0) loader["main"] = p.main;
    }
    return {
        {"pid", p.pid},
        {"ppid", p.ppid},
        {"uid", p.uid},
        {"user", p.user},
        {"comm", p.comm},
        {"argv", p.argv},
        {"state", std::string(1, p.state)},
        {"res_kib", p.res ? nlohmann::json(*p.res) : nlohmann::json(nullptr)},
        {"cpu_percent", p.cpu_percent ? nlohmann::json(*p.cpu_percent) : nlohmann::json(nullptr)},
        {"start_time", p.start_time},
        {"start_ticks", p.start_ticks},
        {"loader", loader}};
}

int run_ps(const PsOptions& o) {
    std::optional<uid_t> only_user;
    if (!o.user.empty()) {
        only_user = uid_of(o.user);
        if (!only_user) {
            print_error("--user " + o.user + ": no such user");
            return exit_bad_input;
        }
    } else if (!o.all) {
        only_user = geteuid();
    }
    const auto interval_us = parse_duration_us(o.interval);
    if (!interval_us || *interval_us > 10'000'000) {
        print_error("--interval " + o.interval +
                    ": expected a duration from 0 to 10s, like 250ms or 1s (0: since start)");
        return exit_bad_input;
    }
    std::vector<ListedProcess> processes;
    try {
        processes = list_processes({std::chrono::milliseconds(*interval_us / 1000)});
    } catch (const ProcessListError& e) {
        print_error(e.what());
        return exit_internal;
    }
    auto shown = [&](const ListedProcess& p) {
        if (only_user && p.uid != *only_user) return false;
        return !o.loaders || p.role != LoaderRole::none;
    };
    if (o.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const ListedProcess& p : processes)
            if (shown(p)) list.push_back(process_json(p));
        const nlohmann::json out{{"format_version", format_version::ps},
                                 {"cpu_interval_ms", *interval_us / 1000},
                                 {"processes", list}};
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return exit_ok;
    }
    const auto width = output_width(o.wide);
    std::cout << cut("    PID USER        RES  CPU% LOADER    COMMAND", width) << "\n";
    std::unordered_map<pid_t, const ListedProcess*> by_pid;
    for (const ListedProcess& p : processes)
        by_pid[p.pid] = &p;
    for (const ListedProcess& p : processes) {
        // A worker is printed under its main (when the main is printed).
        if (!shown(p) || (p.role == LoaderRole::worker && shown(*by_pid.at(p.main)))) continue;
        std::cout << table_line(p, false, width) << "\n";
        for (pid_t worker : p.workers)
            if (shown(*by_pid.at(worker)))
                std::cout << table_line(*by_pid.at(worker), true, width) << "\n";
    }
    return exit_ok;
}

} // namespace

Runner add_ps(CLI::App& app) {
    auto o = std::make_shared<PsOptions>();
    CLI::App* sub = app.add_subcommand(
        "ps", "List processes to record (--pid): user, resident memory, CPU, command; marks "
              "likely data-loader mains and their workers");
    auto* all = sub->add_flag("-a,--all", o->all, "Every user's processes (default: yours)");
    sub->add_option("-u,--user", o->user, "Only this user's processes (name or number)")
        ->excludes(all);
    sub->add_flag("--loaders", o->loaders, "Only likely data-loader mains and their workers");
    sub->add_option("--interval", o->interval,
                    "CPU use measured over this long, as top does; 0: the average since each "
                    "process started, as ps does")
        ->capture_default_str();
    sub->add_flag("--json", o->json, "Machine-readable JSON (exact KiB, whole command lines)");
    sub->add_flag("-w,--wide", o->wide, "Do not cut lines to the terminal's width");
    return [o] { return run_ps(*o); };
}

} // namespace loaderlens::cli
