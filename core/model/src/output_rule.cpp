// SPDX-License-Identifier: MIT
#include "loaderlens/output_rule.hpp"

#include "loaderlens/file_kind.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens {

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

std::string directory_of(const std::string& path) {
    const std::filesystem::path p(path);
    return p.has_parent_path() ? p.parent_path().string() : ".";
}

std::string name_of(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

int write_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : ENOSPC;
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

mode_t new_file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
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
    return path + ": is " + file_kind(st.st_mode) +
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

int output_exit_code(int error) {
    return error == ENOSPC || error == EDQUOT || error == EIO || error == EFBIG ? 1 : 2;
}

int open_output_directory(const std::string& named, const std::string& path, bool owner_checked) {
    const std::string directory = directory_of(path);
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno == ENOTDIR)
        throw OutputRuleError(named + ": " + directory + " is not a directory", 2);
    if (fd < 0)
        throw OutputRuleError(named + ": directory " + directory + ": " + std::strerror(errno), 2);
    struct stat st {};
    std::string problem;
    if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
        problem = named + ": " + directory + " is not a directory";
    else if (owner_checked && st.st_uid != ::geteuid() && st.st_uid != 0)
        problem = named + ": directory " + directory + " belongs to user " +
                  std::to_string(st.st_uid) +
                  ", not to this user or root: it could redirect what is written there";
    if (!problem.empty()) {
        ::close(fd);
        throw OutputRuleError(problem, 2);
    }
    return fd;
}

std::optional<std::string> output_target_problem(const std::string& named, const std::string& path,
                                                 int dir_fd, const std::string& name,
                                                 const InputFiles& inputs) {
    if (name.empty() || name == "." || name == "..")
        return named + ": names a directory, not a file";
    if (auto input = inputs.input_at(path))
        return named + ": is " + (*input == path ? "an input" : "the input " + *input) +
               ", a file of this run: not written over";
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
    if (S_ISLNK(st.st_mode))
        return named + ": is a symbolic link: an output is never written through one";
    if (!S_ISREG(st.st_mode))
        return named + ": is " + file_kind(st.st_mode) + ", not a regular file: not replaced";
    return std::nullopt;
}

std::optional<std::string> replace_at(int dir_fd, const std::string& temporary,
                                      const std::string& name, const std::string& bytes,
                                      mode_t mode) {
    ::unlinkat(dir_fd, temporary.c_str(), 0); // left by a writer that died; a name, never a target
    const int fd = ::openat(dir_fd, temporary.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return "cannot create " + temporary + ": " + std::strerror(errno);
    int error = write_all(fd, bytes);
    if (::close(fd) != 0 && error == 0) error = errno;
    if (error == 0 && ::renameat(dir_fd, temporary.c_str(), dir_fd, name.c_str()) != 0)
        error = errno;
    if (error == 0) return std::nullopt;
    ::unlinkat(dir_fd, temporary.c_str(), 0);
    return std::strerror(error);
}

WholeOutput::WholeOutput(const std::string& named, const std::string& path,
                         const InputFiles& inputs)
    : named_(named), name_(name_of(path)) {
    if (auto problem = output_name_problem("", path))
        throw OutputRuleError(named + ": " + *problem, 2);
    dir_fd_ = open_output_directory(named, path);
    if (auto problem = output_target_problem(named, path, dir_fd_, name_, inputs)) {
        ::close(dir_fd_);
        throw OutputRuleError(*problem, 2);
    }
    struct stat st {};
    const mode_t mode = ::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
                            ? (st.st_mode & 07777)
                            : new_file_mode();
    std::random_device random;
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
        temporary_ = "." + name_ + "." + std::to_string(random() % 1000000000u) + ".tmp";
        fd_ = ::openat(dir_fd_, temporary_.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) {
        const int error = errno;
        ::close(dir_fd_);
        throw OutputRuleError(named + ": cannot create a file beside it: " + std::strerror(error),
                              output_exit_code(error));
    }
    ::fchmod(fd_, mode);
    temporary_path_ = directory_of(path) + "/" + temporary_;
}

WholeOutput::~WholeOutput() {
    if (fd_ >= 0) ::close(fd_);
    if (!temporary_.empty()) ::unlinkat(dir_fd_, temporary_.c_str(), 0);
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

int WholeOutput::write(const std::string& bytes) {
    return write_all(fd_, bytes);
}

std::optional<std::string> WholeOutput::commit(int pending_error) {
    int error = pending_error;
    if (error == 0 && ::fsync(fd_) != 0) error = errno;
    if (fd_ >= 0 && ::close(fd_) != 0 && error == 0) error = errno;
    fd_ = -1;
    // renameat replaces the name in the directory opened at the start: a link planted since
    // is replaced, not followed.
    if (error == 0 && ::renameat(dir_fd_, temporary_.c_str(), dir_fd_, name_.c_str()) != 0)
        error = errno;
    if (error == 0) {
        temporary_.clear();
        return std::nullopt;
    }
    return named_ + ": cannot write: " + std::strerror(error) + " (left as it was)";
}

} // namespace loaderlens
