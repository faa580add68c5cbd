// SPDX-License-Identifier: MIT
// A small tmpfs for disk-full tests: mounted for the object's life (root only), unmounted after.
#pragma once

#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/mount.h>
#include <unistd.h>

namespace loaderlens::test {

// A tmpfs of `kib` KiB mounted at DIR/full; mounted() says whether it could be, error() why not.
class SmallTmpfs {
  public:
    SmallTmpfs(const TempDir& dir, int kib) : path_(dir.file("full")) {
        std::filesystem::create_directory(path_);
        const std::string options = "size=" + std::to_string(kib) + "k,mode=0755";
        mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
        if (!mounted_) error_ = std::strerror(errno);
    }
    ~SmallTmpfs() {
        if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    }
    bool mounted() const { return mounted_; }
    const std::string& error() const { return error_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    const std::string& path() const { return path_; }
    // Writes FILLER until the file system is full.
    void fill_up() const {
        const int fd = ::open(file("filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        BOOST_REQUIRE(fd >= 0);
        const std::string block(4096, 'x');
        while (::write(fd, block.data(), block.size()) > 0) {
        }
        ::close(fd);
    }

  private:
    std::string path_, error_;
    bool mounted_ = false;
};

} // namespace loaderlens::test
