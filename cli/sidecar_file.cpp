// SPDX-License-Identifier: MIT
#include "sidecar_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::cli {

SidecarFile::SidecarFile(const std::string& path) : path_(path) {
    const std::filesystem::path absolute = std::filesystem::absolute(path);
    name_ = absolute.filename().string();
    directory_fd_ = ::open(absolute.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (directory_fd_ < 0)
        throw SidecarError(path + ": cannot open its directory: " + std::strerror(errno));
    fd_ = ::openat(directory_fd_, name_.c_str(),
                   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        const int error = errno;
        ::close(directory_fd_);
        if (error == EEXIST)
            throw SidecarError(path + ": exists (a file or link someone else put beside the "
                                      "recording): not used; remove it or choose another -o");
        throw SidecarError(path + ": cannot create: " + std::strerror(error));
    }
    struct stat st {};
    ::fstat(fd_, &st);
    device_ = st.st_dev;
    inode_ = st.st_ino;
    present_ = true;
}

SidecarFile::SidecarFile(SidecarFile&& other) noexcept
    : path_(std::move(other.path_)), name_(std::move(other.name_)), fd_(other.fd_),
      directory_fd_(other.directory_fd_), device_(other.device_), inode_(other.inode_),
      present_(other.present_) {
    other.present_ = false;
    other.fd_ = other.directory_fd_ = -1;
}

SidecarFile::~SidecarFile() {
    remove();
    for (int fd : {fd_, directory_fd_})
        if (fd >= 0) ::close(fd);
}

int SidecarFile::reopen(int flags) const {
    if (fd_ < 0) return -1;
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    return ::open(self.c_str(), flags | O_CLOEXEC | O_NOCTTY);
}

std::string SidecarFile::identity(int fd) const {
    return std::to_string(fd) + ":" + std::to_string(device_) + ":" + std::to_string(inode_);
}

void SidecarFile::remove() {
    if (!present_) return;
    present_ = false;
    // Not a file that took its place since (the directory may be writable by others).
    struct stat st {};
    if (::fstatat(directory_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_dev == device_ && st.st_ino == inode_)
        ::unlinkat(directory_fd_, name_.c_str(), 0);
}

} // namespace loaderlens::cli
