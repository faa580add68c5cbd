// SPDX-License-Identifier: MIT
// What an output may be: a name without control characters; with --force, only a regular file
// (or nothing) is replaced; never a file the command reads.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens::cli {

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

} // namespace loaderlens::cli
