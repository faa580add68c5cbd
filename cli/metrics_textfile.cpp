// SPDX-License-Identifier: MIT
#include "metrics_textfile.hpp"

#include "commands.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace loaderlens::cli {

namespace {

std::string temp_name(const std::string& path) {
    return path + "." + std::to_string(getpid()) + ".tmp";
}

// Whether `path` starts like an SQLite database (a recording): the 16-byte header.
bool is_sqlite_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    char header[16] = {};
    const ssize_t n = ::read(fd, header, sizeof header);
    ::close(fd);
    return n == sizeof header && std::memcmp(header, "SQLite format 3", 16) == 0;
}

// Writes `text` to `temp` and renames it over `path`; the reason when that fails (temp removed).
std::optional<std::string> write_atomically(const std::string& temp, const std::string& path,
                                            const std::string& text) {
    ::unlink(temp.c_str()); // one left by a writer that died: O_EXCL then never follows a link
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return std::string("cannot create ") + temp + ": " + std::strerror(errno);
    std::size_t done = 0;
    int error = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = n < 0 ? errno : ENOSPC;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && error == 0) error = errno;
    if (error == 0 && ::rename(temp.c_str(), path.c_str()) != 0) error = errno;
    if (error == 0) return std::nullopt;
    ::unlink(temp.c_str());
    return std::strerror(error);
}

} // namespace

std::optional<std::string> MetricsTextfile::problem(const std::string& path,
                                                    const InputFiles& run_files) {
    if (auto problem = output_name_problem("--metrics-textfile", path)) return problem;
    const std::string option = "--metrics-textfile " + path + ": ";
    const std::filesystem::path p(path);
    const std::string name = p.filename().string();
    if (!name.ends_with(".prom"))
        return option + "the name must end in .prom (node_exporter's textfile collector reads "
                        "only *.prom files)";
    const std::string directory = p.parent_path().empty() ? "." : p.parent_path().string();
    struct stat st {};
    if (::stat(directory.c_str(), &st) != 0)
        return option + "directory " + directory + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return option + directory + " is not a directory";
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode)) return option + "exists and is not a regular file: not replaced";
        if (is_sqlite_file(path)) return option + "is an SQLite file (a recording?): not replaced";
    }
    if (auto file = run_files.input_at(path))
        return option + "is " + *file + ", a file of this run: not written over";
    // What each rewrite does: make a file in the directory (permissions, a read-only mount).
    const std::string temp = temp_name(path);
    ::unlink(temp.c_str());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return option + "cannot write in " + directory + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(temp.c_str());
    return std::nullopt;
}

MetricsTextfile::MetricsTextfile(std::string path, std::string recording)
    : path_(std::move(path)), temp_(temp_name(path_)), recording_path_(std::move(recording)) {
    thread_ = std::thread([this] { run(); });
}

MetricsTextfile::~MetricsTextfile() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
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
    if (auto problem = write_atomically(temp_, path_, text))
        warn("cannot write: " + *problem + "; the recording goes on (tried again each second)");
}

void MetricsTextfile::run() {
    try {
        recording_ = std::make_unique<Recording>(recording_path_);
    } catch (const std::exception& e) {
        reading_failed_ = true;
        warn(std::string("cannot read the recording, the file is not written: ") + e.what());
        return;
    }
    while (true) {
        if (read()) write(metrics_.textfile(true));
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
    write(metrics_.textfile(false));
    if (auto warning = take_warning()) print_error(*warning);
}

} // namespace loaderlens::cli
