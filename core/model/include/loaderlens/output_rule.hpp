// SPDX-License-Identifier: MIT
// The one rule every output of every command follows, the CLI's and the GUI's (docs/outputs.md):
// never one of the run's inputs (the same file through any name, or a recording's -wal, -shm,
// -journal), never through a symbolic link, never into a FIFO, a device, a directory or a socket,
// and written whole: a temporary file in the output's directory, renamed over the name once
// complete. The directory is opened once; the file is made and renamed relative to it (openat,
// renameat, O_NOFOLLOW), so a directory component swapped for a symbolic link mid-run redirects
// nothing. No Qt, no SQLite: the lowest layer, linked by the CLI and the GUI alike.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens {

// Why `path`, given as `option` ("-o"; empty for a positional argument), cannot name an output
// file: it is empty or holds a control character (a newline would split every message naming the
// file, and the lines of any tool that lists it). Nothing when it can.
std::optional<std::string> output_name_problem(const std::string& option, const std::string& path);

// SQLite's companions of a database file: "-wal", "-shm", "-journal".
const std::vector<std::string>& sqlite_companion_suffixes();

// Why --force must not replace `path`: it exists and is not a regular file (a symbolic link, a
// FIFO, a device node, a directory, a socket), which no recording could have been. Nothing when
// it is absent or a regular file.
std::optional<std::string> replace_problem(const std::string& path);

// The files a command reads, so that it never writes over one of them: the same file (st_dev,
// st_ino: through a hard link, a symbolic link or another spelling of its name), or the same name
// of a recording's companion that does not exist yet.
class InputFiles {
  public:
    // A file the command reads.
    void add(const std::string& path);
    // A recording: the file, its -wal, -shm and -journal.
    void add_recording(const std::string& path);
    // The input that writing `path` would overwrite (following symbolic links), if any.
    std::optional<std::string> input_at(const std::string& path) const;
    // The input that the open file `fd` is (standard output appending to it), if any.
    std::optional<std::string> input_at(int fd) const;

  private:
    struct Input {
        std::string path;       // as given
        std::string normalized; // absolute, symbolic links of existing parts resolved
        bool exists = false;
        dev_t device = 0;
        ino_t inode = 0;
    };
    std::vector<Input> inputs_;
};

// An output that cannot be written: exit_code 2 for a name or place that cannot take it (bad
// input), 1 when the disk is full.
struct OutputRuleError : std::runtime_error {
    OutputRuleError(const std::string& message, int code)
        : std::runtime_error(message), exit_code(code) {}
    int exit_code;
};

// The exit code for an errno met while writing: 1 for a full disk, 2 otherwise.
int output_exit_code(int error);

// The directory of `path` opened once (O_DIRECTORY), checked on the descriptor: a directory; with
// `owner_checked` (a file rewritten for the whole run, by root maybe), one owned by this user or
// root, or else root would write where another user decides. `named` is how messages name the
// output ("--junit out.xml"). Throws OutputRuleError.
int open_output_directory(const std::string& named, const std::string& path,
                          bool owner_checked = false);

// Why the name `name` in the directory `dir_fd` cannot take the output, looked at without
// following a link: a symbolic link, not a regular file, or one of `inputs` (`path` is the name as
// given, for that check and for messages). Nothing when it is absent or a regular file no input is.
std::optional<std::string> output_target_problem(const std::string& named, const std::string& path,
                                                 int dir_fd, const std::string& name,
                                                 const InputFiles& inputs);

// Writes `bytes` to a new file `temporary` in `dir_fd` (O_EXCL, O_NOFOLLOW) and renames it over
// `name` there; the reason when that fails (the temporary file removed, `name` as it was).
std::optional<std::string> replace_at(int dir_fd, const std::string& temporary,
                                      const std::string& name, const std::string& bytes,
                                      mode_t mode = 0644);

// One output written whole under the rule. The constructor checks everything and creates the
// temporary file (throws OutputRuleError); commit() syncs it and renames it into place. Without
// commit(), nothing is left and the name is as it was.
class WholeOutput {
  public:
    WholeOutput(const std::string& named, const std::string& path, const InputFiles& inputs);
    ~WholeOutput();
    WholeOutput(const WholeOutput&) = delete;
    WholeOutput& operator=(const WholeOutput&) = delete;

    int fd() const { return fd_; }
    // The temporary file's full name (for removal by a signal handler).
    const std::string& temporary_path() const { return temporary_path_; }
    // Writes all of `bytes`; the errno of a failure, 0 when written.
    int write(const std::string& bytes);
    // `pending_error`: an errno the caller met writing to fd(). The one-line reason on failure.
    std::optional<std::string> commit(int pending_error = 0);

  private:
    std::string named_, name_, temporary_, temporary_path_;
    int dir_fd_ = -1, fd_ = -1;
};

} // namespace loaderlens
