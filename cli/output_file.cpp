// SPDX-License-Identifier: MIT
#include "output_file.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

// The temporary file an interrupt must not leave behind (one OutputFile at a time), in a buffer a
// signal handler can read.
char interrupted_temporary[PATH_MAX] = {};
struct sigaction previous_handlers[3] = {};
constexpr int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_temporary_and_die(int signal) {
    if (interrupted_temporary[0] != '\0') ::unlink(interrupted_temporary);
    ::signal(signal, SIG_DFL);
    ::raise(signal);
}

// Out of space is "the output could not be written" (1); anything else about the place given
// (no such directory, permission denied, read-only) is bad input (2).
int exit_code_for(int error) {
    return error == ENOSPC || error == EDQUOT || error == EIO || error == EFBIG ? 1 : 2;
}

mode_t new_file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
}

} // namespace

void remove_on_interrupt(const std::string& temporary) {
    if (temporary.size() >= sizeof interrupted_temporary) return;
    std::memcpy(interrupted_temporary, temporary.c_str(), temporary.size() + 1);
    struct sigaction action {};
    action.sa_handler = remove_temporary_and_die;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < 3; ++i)
        sigaction(cleanup_signals[i], &action, &previous_handlers[i]);
}

void stop_removing_on_interrupt() {
    if (interrupted_temporary[0] == '\0') return;
    for (int i = 0; i < 3; ++i)
        sigaction(cleanup_signals[i], &previous_handlers[i], nullptr);
    interrupted_temporary[0] = '\0';
}

OutputFile::OutputFile(const std::string& path)
    : path_(path), target_(path), fd_(open_output()), buffer_(fd_), stream_(&buffer_) {}

int OutputFile::open_output() {
    struct stat st {};
    const bool exists = ::stat(path_.c_str(), &st) == 0; // through a symbolic link: its target
    if (exists && S_ISDIR(st.st_mode)) throw OutputFileError(path_ + ": is a directory", 2);
    if (exists && !S_ISREG(st.st_mode)) { // a FIFO, a terminal, a device: a stream
        // Not blocking in open(): a FIFO nobody reads would make the export wait forever.
        const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENXIO)
            throw OutputFileError(path_ + ": a FIFO that nobody reads: nothing written", 1);
        if (fd < 0)
            throw OutputFileError(path_ + ": cannot write: " + std::strerror(errno),
                                  exit_code_for(errno));
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    }
    struct stat link {};
    if (::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
        std::error_code error;
        auto resolved = std::filesystem::weakly_canonical(path_, error);
        if (!error) target_ = resolved.string();
    }
    const std::filesystem::path target(target_);
    const auto directory =
        target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    std::string pattern = (directory / ("." + target.filename().string() + ".XXXXXX")).string();
    const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd < 0)
        throw OutputFileError(path_ + ": cannot create a file beside it: " + std::strerror(errno),
                              exit_code_for(errno));
    temporary_ = pattern;
    ::fchmod(fd, exists ? (st.st_mode & 07777) : new_file_mode());
    remove_on_interrupt(temporary_);
    return fd;
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!temporary_.empty()) {
        ::unlink(temporary_.c_str());
        stop_removing_on_interrupt();
    }
}

std::optional<std::string> OutputFile::commit() {
    stream_.flush();
    int error = buffer_.error();
    if (error == 0 && !temporary_.empty() && ::fsync(fd_) != 0) error = errno;
    // Closed whatever failed before (the descriptor is ours either way); close() may report a
    // write error of its own (NFS, quota).
    if (fd_ >= 0 && ::close(fd_) != 0 && error == 0) error = errno;
    fd_ = -1;
    if (error == 0 && !temporary_.empty()) {
        if (::rename(temporary_.c_str(), target_.c_str()) != 0)
            error = errno;
        else
            temporary_.clear();
        stop_removing_on_interrupt();
    }
    if (error == 0) return std::nullopt;
    return path_ + ": cannot write: " + std::strerror(error) +
           (temporary_.empty() ? "" : " (" + path_ + " is left as it was)");
}

} // namespace loaderlens::cli
