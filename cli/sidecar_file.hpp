// SPDX-License-Identifier: MIT
// A file loaderlens makes beside a recording for the command to write into (the markers file of
// LOADERLENS_MARKERS, replay's LOADERLENS_LOADER_EVENTS), removed when the recording ends.
#pragma once

#include <stdexcept>
#include <string>
#include <sys/types.h>

namespace loaderlens::cli {

struct SidecarError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class SidecarFile {
  public:
    // Creates `path` empty with O_CREAT|O_EXCL|O_NOFOLLOW: never through a symbolic link, never
    // over a file that exists (whoever can write the directory could have put a link to any file
    // there, and the recorder may run as root). Throws SidecarError (one line) when it cannot.
    explicit SidecarFile(const std::string& path);
    // Removes the file, if it is still the one created here.
    ~SidecarFile();
    SidecarFile(SidecarFile&& other) noexcept;
    SidecarFile& operator=(SidecarFile&&) = delete;
    SidecarFile(const SidecarFile&) = delete;
    SidecarFile& operator=(const SidecarFile&) = delete;

    const std::string& path() const { return path_; }
    // Removes it now (see the destructor); again is harmless.
    void remove();

  private:
    std::string path_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    bool present_ = false;
};

} // namespace loaderlens::cli
