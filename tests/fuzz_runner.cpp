// SPDX-License-Identifier: MIT
#include "fuzz_runner.hpp"

#include "fuzz_outcome.hpp"
#include "fuzz_random.hpp"
#include "fuzz_spawn.hpp"
#include "support.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <map>
#include <optional>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace loaderlens::test {

namespace fs = std::filesystem;
using namespace std::chrono;

struct FuzzRunner::Slot {
    pid_t pid = -1;
    std::size_t case_index = 0, command_index = 0;
    steady_clock::time_point started;
    std::string out_path, err_path;
    const FuzzCase* fuzz_case = nullptr;
    const FuzzCommand* command = nullptr;
    std::vector<std::string>* failures = nullptr; // the case's
};

namespace {

// A file's identity for "no command changed it": what lstat says of it (type, device number,
// a symlink's target) and, for a regular file, its size, its modification time and the FNV-1a
// of its first 64 MiB (a sparse file of gigabytes would take seconds to hash); or absent.
struct FileState {
    bool exists = false;
    mode_t type = 0;
    dev_t device = 0;
    std::string link;
    std::uintmax_t size = 0;
    std::int64_t modified_ns = 0;
    std::uint64_t hash = 0;
    bool operator==(const FileState&) const = default;
};

FileState state_of(const std::string& path) {
    FileState state;
    struct stat info {};
    if (lstat(path.c_str(), &info) != 0) return state;
    state.exists = true;
    state.type = info.st_mode & S_IFMT;
    state.device = info.st_rdev;
    std::error_code error;
    if (S_ISLNK(info.st_mode)) state.link = fs::read_symlink(path, error).string();
    if (!S_ISREG(info.st_mode)) return state;
    state.size = static_cast<std::uintmax_t>(info.st_size);
    state.modified_ns = info.st_mtim.tv_sec * 1'000'000'000ll + info.st_mtim.tv_nsec;
    std::ifstream in(path, std::ios::binary);
    std::uint64_t hash = 0xcbf29ce484222325ull;
    char buffer[1 << 16];
    std::uintmax_t hashed = 0;
    while (hashed < (64u << 20) && (in.read(buffer, sizeof buffer) || in.gcount() > 0)) {
        for (std::streamsize i = 0; i < in.gcount(); ++i)
            hash = (hash ^ static_cast<unsigned char>(buffer[i])) * 0x100000001b3ull;
        hashed += static_cast<std::uintmax_t>(in.gcount());
    }
    state.hash = hash;
    return state;
}

std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a case held before its commands ran.
struct Snapshot {
    std::vector<FileState> unchanged;
    std::vector<std::string> names;
};

} // namespace

FuzzRunner::FuzzRunner(std::string scratch, int parallel, milliseconds timeout)
    : scratch_(std::move(scratch)), parallel_(parallel), timeout_(timeout) {
    for (char** variable = environ; *variable; ++variable) {
        if (std::strncmp(*variable, "ASAN_OPTIONS=", 13) != 0) environment_.emplace_back(*variable);
    }
    // Under ASan a huge allocation returns null (so std::bad_alloc, as in a release build, which
    // the CLI must turn into a clean error) and a process whose memory runs away is stopped.
    const char* asan = std::getenv("ASAN_OPTIONS");
    environment_.push_back(std::string("ASAN_OPTIONS=") + (asan && *asan ? asan : "") +
                           (asan && *asan ? ":" : "") +
                           "allocator_may_return_null=1:max_allocation_size_mb=3072:"
                           "hard_rss_limit_mb=3072");
    fs::create_directories(fs::path(scratch_) / "work");
    fs::permissions(scratch_, fs::perms::all, fs::perm_options::add); // for nobody's commands
    fs::permissions(fs::path(scratch_) / "work", fs::perms::all, fs::perm_options::add);
}

void FuzzRunner::start(Slot& slot) {
    slot.started = steady_clock::now();
    slot.pid = spawn_command(*slot.command, (fs::path(scratch_) / "work").string(), slot.out_path,
                             slot.err_path, environment_);
}

void FuzzRunner::finish(Slot& slot, int status, bool timed_out) {
    const double seconds = duration<double>(steady_clock::now() - slot.started).count();
    // Whatever the command left running in its process group goes with it.
    kill(-slot.pid, SIGKILL);
    ++commands_run_;
    if (seconds > slowest_seconds_) {
        slowest_seconds_ = seconds;
        slowest_command_ = shell_line(slot.command->argv);
    }
    CommandEnd end;
    end.timed_out = timed_out;
    end.status = status;
    end.seconds = seconds;
    end.out = slurp(slot.out_path);
    end.err = slurp(slot.err_path);
    if (auto wrong = judge_outcome(*slot.command, end)) {
        std::string message = *wrong;
        message += "\n    command: " + shell_line(slot.command->argv);
        if (slot.command->as_nobody) message += "   (as user nobody)";
        slot.failures->push_back(message);
    }
    slot.pid = -1;
}

std::vector<std::string> FuzzRunner::run(const std::vector<FuzzCase>& cases) {
    std::vector<Snapshot> before(cases.size());
    std::vector<std::vector<std::string>> failures(cases.size());
    std::vector<std::size_t> pending(cases.size());
    std::deque<std::pair<std::size_t, std::size_t>> queue;
    for (std::size_t c = 0; c < cases.size(); ++c) {
        for (const auto& path : cases[c].unchanged)
            before[c].unchanged.push_back(state_of(path));
        if (!cases[c].no_new_files_in.empty()) before[c].names = names_in(cases[c].no_new_files_in);
        pending[c] = cases[c].commands.size();
        for (std::size_t k = 0; k < cases[c].commands.size(); ++k)
            queue.emplace_back(c, k);
    }
    std::vector<std::string> messages;
    auto case_done = [&](std::size_t c) {
        const FuzzCase& fuzz_case = cases[c];
        ++cases_run_;
        for (std::size_t i = 0; i < fuzz_case.unchanged.size(); ++i) {
            if (!(state_of(fuzz_case.unchanged[i]) == before[c].unchanged[i]))
                failures[c].push_back("a command changed (or removed) its input " +
                                      shell_quote(fuzz_case.unchanged[i]));
        }
        if (!fuzz_case.no_new_files_in.empty()) {
            for (const auto& name : names_in(fuzz_case.no_new_files_in)) {
                if (!std::binary_search(before[c].names.begin(), before[c].names.end(), name))
                    failures[c].push_back("a command created " + shell_quote(name) +
                                          " beside its input (a reader must write nothing)");
            }
        }
        if (failures[c].empty()) return;
        std::string kept;
        if (auto keep = fuzz_keep_dir()) {
            const fs::path into = fs::path(*keep) / (seed_text(fuzz_case.seed) + "-case-" +
                                                     std::to_string(fuzz_case.index));
            std::error_code error;
            fs::create_directories(into, error);
            for (const auto& path : fuzz_case.keep)
                fs::copy(path, into / fs::path(path).filename(),
                         fs::copy_options::recursive | fs::copy_options::overwrite_existing, error);
            kept = "\n  inputs kept in " + into.string();
        }
        std::string header = "fuzz case failed: seed " + seed_text(fuzz_case.seed) + " case " +
                             std::to_string(fuzz_case.index) +
                             " (replay: LOADERLENS_FUZZ_SEED=" + seed_text(fuzz_case.seed) +
                             " LOADERLENS_FUZZ_CASE=" + std::to_string(fuzz_case.index) + ")" +
                             "\n  damage: " + fuzz_case.damage +
                             "\n  reproduce: " + fuzz_case.reproducer + kept;
        for (const auto& failure : failures[c])
            messages.push_back(header + "\n  " + failure);
    };

    std::vector<Slot> slots(static_cast<std::size_t>(parallel_));
    for (std::size_t i = 0; i < slots.size(); ++i) {
        slots[i].out_path = (fs::path(scratch_) / ("out." + std::to_string(i))).string();
        slots[i].err_path = (fs::path(scratch_) / ("err." + std::to_string(i))).string();
    }
    for (;;) {
        bool busy = false, progressed = false;
        for (Slot& slot : slots) {
            if (slot.pid < 0 && !queue.empty()) {
                auto [c, k] = queue.front();
                queue.pop_front();
                slot.case_index = c;
                slot.command_index = k;
                slot.fuzz_case = &cases[c];
                slot.command = &cases[c].commands[k];
                slot.failures = &failures[c];
                start(slot);
                if (slot.pid < 0) {
                    failures[c].push_back("fork failed: " + std::string(std::strerror(errno)));
                    if (--pending[c] == 0) case_done(c);
                    continue;
                }
            }
            if (slot.pid < 0) continue;
            busy = true;
            int status = 0;
            const pid_t ended = waitpid(slot.pid, &status, WNOHANG);
            const bool late = steady_clock::now() - slot.started > timeout_;
            if (ended == 0 && !late) continue;
            if (ended == 0) {
                kill(-slot.pid, SIGKILL);
                kill(slot.pid, SIGKILL);
                waitpid(slot.pid, &status, 0);
            }
            const std::size_t c = slot.case_index;
            finish(slot, status, ended == 0);
            progressed = true;
            if (--pending[c] == 0) case_done(c);
        }
        if (!busy && queue.empty()) break;
        if (!progressed) std::this_thread::sleep_for(milliseconds(2));
    }
    return messages;
}

std::string fuzz_cli() {
    const char* other = std::getenv("LOADERLENS_FUZZ_CLI");
    return other && *other ? std::string(other) : cli_path();
}

std::string shell_quote(const std::string& text) {
    bool plain = !text.empty();
    for (unsigned char ch : text)
        plain = plain && (std::isalnum(ch) || std::strchr("/._-=+:,%@", ch));
    if (plain) return text;
    return "$'" + backslash_escaped(text) + "'";
}

std::string shell_line(const std::vector<std::string>& argv) {
    std::string line;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        if (i) line += ' ';
        line += (i == 0 && (argv[i] == cli_path() || argv[i] == fuzz_cli()))
                    ? std::string("loaderlens")
                    : shell_quote(argv[i]);
    }
    // An argument of 100 KB (a regex, a path) would bury the report.
    if (line.size() > 600)
        line = line.substr(0, 600) + "... (" + std::to_string(line.size()) + " bytes)";
    return line;
}

} // namespace loaderlens::test
