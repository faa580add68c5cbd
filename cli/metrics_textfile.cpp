// SPDX-License-Identifier: MIT
#include "metrics_textfile.hpp"

#include "commands.hpp"
#include "loaderlens/proc_text.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace loaderlens::cli {

namespace {

std::string temp_name(const std::string& name) {
    return name + "." + std::to_string(getpid()) + ".tmp";
}

// Directories problem() opened, for the MetricsTextfile made next for the same path: the one
// checked is the one written to, whatever its path names later.
std::mutex checked_mutex;
std::map<std::string, int> checked_directories;

// Whether `name` in `dir_fd` starts like an SQLite database (a recording): the 16-byte header.
bool is_sqlite_file(int dir_fd, const std::string& name) {
    const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) return false;
    char header[16] = {};
    const ssize_t n = ::read(fd, header, sizeof header);
    ::close(fd);
    return n == sizeof header && std::memcmp(header, "SQLite format 3", 16) == 0;
}

std::optional<std::string> check_in(int dir_fd, const std::string& path,
                                    const InputFiles& run_files) {
    const std::string named = "--metrics-textfile " + path;
    const std::string name = std::filesystem::path(path).filename().string();
    if (auto problem = output_target_problem(named, path, dir_fd, name, run_files)) return problem;
    if (is_sqlite_file(dir_fd, name))
        return named + ": is an SQLite file (a recording?): not replaced";
    // What each rewrite does: make a file in the directory (permissions, a read-only mount).
    const std::string temp = temp_name(name);
    ::unlinkat(dir_fd, temp.c_str(), 0);
    const int fd =
        ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        const std::string directory = std::filesystem::path(path).has_parent_path()
                                          ? std::filesystem::path(path).parent_path().string()
                                          : ".";
        return named + ": cannot write in " + directory + ": " + std::strerror(errno);
    }
    ::close(fd);
    ::unlinkat(dir_fd, temp.c_str(), 0);
    return std::nullopt;
}

// The recorder's own memory now, from /proc/self (as run_meta.cpp's footprint at the end).
RecorderFootprint own_footprint() {
    RecorderFootprint f;
    if (auto status = read_text_file("/proc/self/status")) {
        const KbField fields[] = {{"VmRSS", &f.rss}, {"VmHWM", &f.peak_rss}, {"RssAnon", &f.anon}};
        parse_kb_fields(*status, fields);
    }
    if (auto rollup = read_text_file("/proc/self/smaps_rollup")) {
        const KbField fields[] = {{"Pss", &f.pss}};
        parse_kb_fields(*rollup, fields);
    }
    return f;
}

std::int64_t wall_clock_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::pair<dev_t, ino_t> identity(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {0, 0};
    return {st.st_dev, st.st_ino};
}

} // namespace

std::optional<std::string> MetricsTextfile::problem(const std::string& path,
                                                    const InputFiles& run_files) {
    if (auto problem = output_name_problem("--metrics-textfile", path)) return problem;
    const std::string option = "--metrics-textfile " + path + ": ";
    const std::string name = std::filesystem::path(path).filename().string();
    if (!name.ends_with(".prom"))
        return option + "the name must end in .prom (node_exporter's textfile collector reads "
                        "only *.prom files)";
    int dir_fd = -1;
    try {
        dir_fd = open_output_directory("--metrics-textfile " + path, path, true);
    } catch (const OutputRuleError& e) {
        return e.what();
    }
    if (auto problem = check_in(dir_fd, path, run_files)) {
        ::close(dir_fd);
        return problem;
    }
    std::lock_guard lock(checked_mutex);
    auto [it, added] = checked_directories.emplace(path, dir_fd);
    if (!added) {
        ::close(it->second);
        it->second = dir_fd;
    }
    return std::nullopt;
}

MetricsTextfile::MetricsTextfile(std::string path, std::string recording)
    : path_(std::move(path)), name_(std::filesystem::path(path_).filename().string()),
      temp_(temp_name(name_)), recording_path_(std::move(recording)) {
    {
        std::lock_guard lock(checked_mutex);
        if (auto it = checked_directories.find(path_); it != checked_directories.end()) {
            dir_fd_ = it->second;
            checked_directories.erase(it);
        }
    }
    if (dir_fd_ < 0) {
        try {
            dir_fd_ = open_output_directory("--metrics-textfile " + path_, path_, true);
        } catch (const OutputRuleError& e) {
            warned_ = true;
            warning_ = e.what();
        }
    }
    thread_ = std::thread([this] { run(); });
}

MetricsTextfile::~MetricsTextfile() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

void MetricsTextfile::warn(const std::string& message) {
    std::lock_guard lock(mutex_);
    if (warned_) return;
    warned_ = true;
    warning_ = "--metrics-textfile " + path_ + ": " + message;
}

std::optional<std::string> MetricsTextfile::take_warning() {
    std::lock_guard lock(mutex_);
    return std::exchange(warning_, std::nullopt);
}

bool MetricsTextfile::read() {
    if (!recording_ || reading_failed_) return false;
    try {
        if (recording_->has_new(cursor_)) metrics_.add(recording_->read_new(cursor_));
        return true;
    } catch (const std::exception& e) { // RecordingError, or no memory for the rows
        reading_failed_ = true;
        warn(std::string("cannot read the recording any more, the file is not updated: ") +
             e.what());
        return false;
    }
}

void MetricsTextfile::write(const std::string& text) {
    if (dir_fd_ < 0) return; // said when it could not be opened
    if (auto problem = replace_at(dir_fd_, temp_, name_, text))
        warn("cannot write: " + *problem + "; the recording goes on (tried again each second)");
}

void MetricsTextfile::run() {
    try {
        recording_ = std::make_unique<Recording>(recording_path_);
        recording_identity_ = identity(recording_path_);
    } catch (const std::exception& e) {
        reading_failed_ = true;
        warn(std::string("cannot read the recording, the file is not written: ") + e.what());
        return;
    }
    while (true) {
        if (read()) {
            metrics_.set_recorder(own_footprint());
            write(metrics_.textfile(true, wall_clock_ms()));
        }
        std::unique_lock lock(mutex_);
        // Woken at once by stop_reading(): the command's end never waits for a second to pass.
        if (wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) break;
    }
}

void MetricsTextfile::stop_reading() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    read();
    recording_.reset();
}

void MetricsTextfile::write_final() {
    // The recorder's footprint as the recording's meta has it (written when it finished), so that
    // the views' counted peaks are the report's; /proc/self where it has none. Read only from the
    // file this thread read: a recording moved away leaves its name to another file.
    RecorderFootprint footprint = own_footprint();
    try {
        if (recording_identity_.second != 0 && identity(recording_path_) == recording_identity_) {
            const Recording finished(recording_path_);
            for (const auto& [key, figure] :
                 {std::pair{"recorder_peak_rss_kb", &footprint.peak_rss},
                  std::pair{"recorder_pss_kb", &footprint.pss},
                  std::pair{"recorder_anon_kb", &footprint.anon}})
                if (auto kb = finished.meta_number(key)) *figure = *kb;
        }
    } catch (const std::exception&) { // unreadable now: /proc/self's figures stand
    }
    metrics_.set_recorder(footprint);
    write(metrics_.textfile(false));
    if (auto warning = take_warning()) print_error(*warning);
}

} // namespace loaderlens::cli
