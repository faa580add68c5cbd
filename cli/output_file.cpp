// SPDX-License-Identifier: MIT
#include "output_file.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
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
    return output_exit_code(error);
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

OutputFile::OutputFile(const std::string& path, const InputFiles& inputs, bool streams_allowed,
                       const std::string& named)
    : path_(path), named_(named.empty() ? path : named), fd_(open_output(inputs, streams_allowed)),
      buffer_(fd_), stream_(&buffer_) {}

int OutputFile::open_output(const InputFiles& inputs, bool streams_allowed) {
    struct stat st {};
    const bool is_stream = ::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
                           !S_ISDIR(st.st_mode); // through a link too: /dev/stdout
    if (streams_allowed && is_stream) {
        // Not blocking in open(): a FIFO nobody reads would make the export wait forever.
        const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == ENXIO)
            throw OutputFileError(named_ + ": a FIFO that nobody reads: nothing written", 1);
        if (fd < 0)
            throw OutputFileError(named_ + ": cannot write: " + std::strerror(errno),
                                  exit_code_for(errno));
        // A link to /proc/self/fd/N may end at a regular file after all (an input, even).
        if (auto input = inputs.input_at(fd)) {
            ::close(fd);
            throw OutputFileError(
                named_ + ": is the input " + *input + " of this run: not written over", 2);
        }
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    }
    try {
        whole_ = std::make_unique<WholeOutput>(named_, path_, inputs);
    } catch (const OutputRuleError& e) {
        throw OutputFileError(e.what(), e.exit_code);
    }
    remove_on_interrupt(whole_->temporary_path());
    return whole_->fd();
}

OutputFile::~OutputFile() {
    if (whole_) {
        whole_.reset(); // removes the temporary file unless renamed
        stop_removing_on_interrupt();
    } else if (fd_ >= 0) {
        ::close(fd_);
    }
}

std::optional<std::string> OutputFile::commit() {
    stream_.flush();
    int error = buffer_.error();
    if (whole_) {
        auto problem = whole_->commit(error);
        fd_ = -1;
        stop_removing_on_interrupt();
        return problem;
    }
    // close() may report a write error of its own (NFS, quota).
    if (fd_ >= 0 && ::close(fd_) != 0 && error == 0) error = errno;
    fd_ = -1;
    if (error == 0) return std::nullopt;
    return named_ + ": cannot write: " + std::strerror(error);
}

} // namespace loaderlens::cli
