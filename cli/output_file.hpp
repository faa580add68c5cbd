// SPDX-License-Identifier: MIT
// The file `export -o PATH` writes. A regular file (or a new one) is written under a temporary
// name in its directory and renamed over PATH once complete: a full disk, an error or an
// interrupt never leaves a truncated file under PATH, and an old PATH stays as it was until then.
// Anything else that can be written (a FIFO, a terminal, /dev/stdout) is written directly.
#pragma once

#include "fd_output_buffer.hpp"

#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

namespace loaderlens::cli {

struct OutputFileError : std::runtime_error {
    OutputFileError(const std::string& message, int code)
        : std::runtime_error(message), exit_code(code) {}
    int exit_code; // 2: the path cannot name an output here; 1: the disk is full
};

// Until stop_removing_on_interrupt(), SIGINT, SIGTERM or SIGHUP removes `temporary` before the
// process dies of the signal (one file at a time: OutputFile's, or the merge's).
void remove_on_interrupt(const std::string& temporary);
void stop_removing_on_interrupt();

class OutputFile {
  public:
    // Throws OutputFileError (one line) when PATH cannot be written.
    explicit OutputFile(const std::string& path);
    // Removes the temporary file unless commit() renamed it.
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    std::ostream& stream() { return stream_; }
    // Flushes, syncs and renames the file into place; the one-line reason when it cannot (then
    // nothing is left under the temporary name, and PATH is as it was).
    std::optional<std::string> commit();

  private:
    // Opens what the file is written to (setting target_, and temporary_ when renamed later).
    int open_output();

    std::string path_;      // as given (for messages)
    std::string target_;    // where the file ends up (a symbolic link's target)
    std::string temporary_; // empty when writing directly
    int fd_;
    FdOutputBuffer buffer_;
    std::ostream stream_;
};

} // namespace loaderlens::cli
