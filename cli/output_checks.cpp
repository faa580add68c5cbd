// SPDX-License-Identifier: MIT
#include "output_checks.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace loaderlens::cli {

namespace {

// Absolute, with the symbolic links of the existing part resolved: two spellings of one name
// compare equal even when the file does not exist yet.
std::string normalized(const std::string& path) {
    std::error_code error;
    auto absolute = std::filesystem::absolute(path, error);
    if (error) return path;
    auto resolved = std::filesystem::weakly_canonical(absolute, error);
    return error ? absolute.lexically_normal().string() : resolved.string();
}

std::string kind_of(mode_t mode) {
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

} // namespace

std::optional<std::string> output_name_problem(const std::string& option, const std::string& path) {
    const std::string named = option.empty() ? path : option + " " + path;
    if (path.empty()) return (option.empty() ? "" : option + " ") + "\"\": the file name is empty";
    for (unsigned char c : path)
        if (c < 0x20 || c == 0x7f)
            return named + ": the file name holds a control character (a newline, a tab...): "
                           "give a name without one";
    return std::nullopt;
}

const std::vector<std::string>& sqlite_companion_suffixes() {
    static const std::vector<std::string> suffixes{"-wal", "-shm", "-journal"};
    return suffixes;
}

std::optional<std::string> replace_problem(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return std::nullopt;
    return path + ": is " + kind_of(st.st_mode) +
           ", not a file a recording left: --force replaces only regular files";
}

void InputFiles::add(const std::string& path) {
    Input input{path, normalized(path)};
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        input.exists = true;
        input.device = st.st_dev;
        input.inode = st.st_ino;
    }
    inputs_.push_back(std::move(input));
}

void InputFiles::add_recording(const std::string& path) {
    add(path);
    for (const std::string& suffix : sqlite_companion_suffixes())
        add(path + suffix);
}

std::optional<std::string> InputFiles::input_at(const std::string& path) const {
    struct stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    const std::string name = normalized(path);
    for (const Input& input : inputs_) {
        if (exists && input.exists && input.device == st.st_dev && input.inode == st.st_ino)
            return input.path;
        if (name == input.normalized) return input.path;
    }
    return std::nullopt;
}

std::optional<std::string> InputFiles::input_at(int fd) const {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    for (const Input& input : inputs_)
        if (input.exists && input.device == st.st_dev && input.inode == st.st_ino)
            return input.path;
    return std::nullopt;
}

} // namespace loaderlens::cli
