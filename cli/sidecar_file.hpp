// SPDX-License-Identifier: MIT
// A file loaderlens makes beside a recording for the command to write into (the markers file of
// LOADERLENS_MARKERS, replay's LOADERLENS_LOADER_EVENTS) or to read (LOADERLENS_SAMPLED), removed
// when the recording ends. Made once, then only used through the descriptors kept here: whoever
// can write the directory may swap the name for a link, a FIFO or another file while the command
// runs (docs/recording.md, "Files beside the recording").
#pragma once

#include "loaderlens/sidecar.hpp"

#include <stdexcept>
#include <string>
#include <sys/types.h>

namespace loaderlens::cli {

struct SidecarError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class SidecarFile {
  public:
    // Creates `path` empty with O_CREAT|O_EXCL|O_NOFOLLOW under its directory's descriptor: never
    // through a symbolic link, never over a file that exists (whoever can write the directory
    // could have put a link to any file there, and the recorder may run as root). Throws
    // SidecarError (one line) when it cannot.
    explicit SidecarFile(const std::string& path);
    // Removes the file, if its name still names the one created here.
    ~SidecarFile();
    SidecarFile(SidecarFile&& other) noexcept;
    SidecarFile& operator=(SidecarFile&&) = delete;
    SidecarFile(const SidecarFile&) = delete;
    SidecarFile& operator=(const SidecarFile&) = delete;

    const std::string& path() const { return path_; }
    // The descriptors for the session (it duplicates them).
    Sidecar sidecar() const { return {fd_, directory_fd_, name_, path_}; }
    // A new descriptor of the same file opened with `flags` (O_WRONLY|O_APPEND for the command),
    // through /proc/self/fd, never the name; -1 when it cannot.
    int reopen(int flags) const;
    // "FD:DEVICE:INODE" for the command's environment (LOADERLENS_*_FD): the loader checks that
    // the descriptor it inherited is this file before it writes to it.
    std::string identity(int fd) const;
    // Removes it now (see the destructor); again is harmless.
    void remove();

  private:
    std::string path_, name_;
    int fd_ = -1, directory_fd_ = -1;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    bool present_ = false;
};

} // namespace loaderlens::cli
