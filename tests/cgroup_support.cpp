// SPDX-License-Identifier: MIT
// Memory cgroups made by tests, found and read without the code under test.
#include "cgroup_support.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace loaderlens::test::cgroups {

namespace {

std::string read_all(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool has_word(const std::string& text, const std::string& word, char separator) {
    std::istringstream parts(text);
    for (std::string part; std::getline(parts, part, separator);) {
        while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back())))
            part.pop_back();
        if (part == word) return true;
    }
    return false;
}

struct Mount {
    std::string root, point, fstype, super_options;
};

// The cgroup and cgroup2 mounts of /proc/self/mountinfo:
// "id parent major:minor root point options [optional...] - fstype source super_options".
std::vector<Mount> cgroup_mounts() {
    std::vector<Mount> out;
    std::istringstream lines(read_all("/proc/self/mountinfo"));
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string id, parent, device, options, word, source;
        Mount m;
        words >> id >> parent >> device >> m.root >> m.point >> options;
        while (words >> word && word != "-") {
        }
        words >> m.fstype >> source >> m.super_options;
        if (m.fstype == "cgroup" || m.fstype == "cgroup2") out.push_back(m);
    }
    return out;
}

std::string errno_text() {
    return std::strerror(errno);
}

} // namespace

std::string write_kernel_file(const fs::path& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return "open " + path.string() + ": " + errno_text();
    const ssize_t written = ::write(fd, text.data(), text.size());
    const std::string error = written == static_cast<ssize_t>(text.size())
                                  ? ""
                                  : "write '" + text + "' to " + path.string() + ": " +
                                        (written < 0 ? errno_text() : "short write");
    ::close(fd);
    return error;
}

std::optional<Hierarchy> memory_v1(std::string& why) {
    std::string own; // our cgroup in the v1 memory hierarchy, from /proc/self/cgroup
    std::istringstream lines(read_all("/proc/self/cgroup"));
    for (std::string line; std::getline(lines, line);) {
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        if (has_word(line.substr(first + 1, second - first - 1), "memory", ','))
            own = line.substr(second + 1);
    }
    for (const Mount& m : cgroup_mounts()) {
        if (m.fstype != "cgroup" || !has_word(m.super_options, "memory", ',') || own.empty())
            continue;
        std::string relative = own;
        if (m.root != "/" && relative.starts_with(m.root))
            relative = relative.substr(m.root.size());
        const fs::path dir = fs::path(m.point) / fs::path(relative).relative_path();
        if (!fs::exists(dir / "memory.usage_in_bytes")) {
            why = "no cgroup v1 memory files in " + dir.string();
            return std::nullopt;
        }
        if (::access(dir.c_str(), W_OK) != 0) {
            why = "cannot make cgroups in " + dir.string() + ": " + errno_text();
            return std::nullopt;
        }
        return Hierarchy{"v1", dir};
    }
    why = "no cgroup v1 memory hierarchy is mounted (/proc/self/mountinfo)";
    return std::nullopt;
}

std::optional<Hierarchy> memory_v2(std::string& why) {
    for (const Mount& m : cgroup_mounts()) {
        if (m.fstype != "cgroup2") continue;
        const fs::path root = m.point;
        const std::string controllers = read_all(root / "cgroup.controllers");
        if (!has_word(controllers, "memory", ' ') && !has_word(controllers, "memory", '\n')) {
            why = "the cgroup2 hierarchy at " + root.string() +
                  " has no memory controller (cgroup.controllers: '" +
                  controllers.substr(0, controllers.find('\n')) +
                  "'; here it belongs to a v1 hierarchy, or is disabled)";
            return std::nullopt;
        }
        const std::string subtree = read_all(root / "cgroup.subtree_control");
        if (!has_word(subtree, "memory", ' ') && !has_word(subtree, "memory", '\n')) {
            const std::string error = write_kernel_file(root / "cgroup.subtree_control", "+memory");
            if (!error.empty()) {
                why = "cannot enable the memory controller below " + root.string() + ": " + error;
                return std::nullopt;
            }
        }
        return Hierarchy{"v2", root};
    }
    why = "no cgroup2 hierarchy is mounted (/proc/self/mountinfo)";
    return std::nullopt;
}

TestCgroup::TestCgroup(const std::string& version, const fs::path& parent, const std::string& name)
    : version_(version), dir_(parent / name) {
    std::error_code error;
    if (fs::exists(dir_)) fs::remove(dir_, error); // a leftover of a killed run
    if (!fs::create_directory(dir_, error)) {
        problem_ = "cannot make the cgroup " + dir_.string() + ": " + error.message();
        return;
    }
    made_ = true;
    if (version_ == "v2" && !fs::exists(dir_ / "memory.current"))
        problem_ = "the cgroup " + dir_.string() + " has no memory.current: " + parent.string() +
                   " does not give its children the memory controller";
}

TestCgroup::~TestCgroup() {
    if (!made_) return;
    // Kill what is left in it, reaping our own children, until it is empty (at most 5 s).
    for (int round = 0; round < 500; ++round) {
        std::istringstream procs(read_all(dir_ / "cgroup.procs"));
        bool any = false;
        for (pid_t pid; procs >> pid;) {
            any = true;
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, WNOHANG);
        }
        if (!any) break;
        std::this_thread::sleep_for(10ms);
    }
    std::error_code ignored;
    for (int attempt = 0; attempt < 50 && fs::exists(dir_); ++attempt) {
        fs::remove(dir_, ignored); // rmdir: a cgroup directory holds only kernel files
        if (fs::exists(dir_)) std::this_thread::sleep_for(20ms);
    }
}

bool TestCgroup::set_limit(std::int64_t bytes) {
    const char* file = version_ == "v2" ? "memory.max" : "memory.limit_in_bytes";
    const std::string error = write_kernel_file(dir_ / file, std::to_string(bytes));
    if (!error.empty()) problem_ = error;
    return error.empty();
}

bool TestCgroup::delegate_memory() {
    if (version_ != "v2") return true;
    const std::string error = write_kernel_file(dir_ / "cgroup.subtree_control", "+memory");
    if (!error.empty()) problem_ = error;
    return error.empty();
}

bool TestCgroup::add(pid_t pid) {
    const std::string error = write_kernel_file(dir_ / "cgroup.procs", std::to_string(pid));
    if (!error.empty()) problem_ = error;
    return error.empty();
}

std::optional<std::int64_t> TestCgroup::usage_bytes() const {
    std::ifstream in(dir_ / (version_ == "v2" ? "memory.current" : "memory.usage_in_bytes"));
    std::int64_t bytes = 0;
    if (in >> bytes) return bytes;
    return std::nullopt;
}

std::optional<std::int64_t> TestCgroup::stat(const std::string& key) const {
    std::istringstream lines(read_all(dir_ / "memory.stat"));
    std::string name;
    std::int64_t value = 0;
    while (lines >> name >> value)
        if (name == key) return value;
    return std::nullopt;
}

std::optional<std::int64_t> TestCgroup::anon_bytes() const {
    return stat(version_ == "v2" ? "anon" : "total_rss");
}

} // namespace loaderlens::test::cgroups
