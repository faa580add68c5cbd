// SPDX-License-Identifier: MIT
#include "sidecar_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::cli {

SidecarFile::SidecarFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int error = errno;
        if (error == EEXIST)
            throw SidecarError(path + ": exists (a file or link someone else put beside the "
                                      "recording): not used; remove it or choose another -o");
        throw SidecarError(path + ": cannot create: " + std::strerror(error));
    }
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    device_ = st.st_dev;
    inode_ = st.st_ino;
    present_ = true;
}

SidecarFile::SidecarFile(SidecarFile&& other) noexcept
    : path_(std::move(other.path_)), device_(other.device_), inode_(other.inode_),
      present_(other.present_) {
    other.present_ = false;
}

SidecarFile::~SidecarFile() {
    remove();
}

void SidecarFile::remove() {
    if (!present_) return;
    present_ = false;
    // Not a file that took its place since (the directory may be writable by others).
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_)
        ::unlink(path_.c_str());
}

} // namespace loaderlens::cli
