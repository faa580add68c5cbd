// SPDX-License-Identifier: MIT
// A file a command writes (`export -o`, `check --junit`), under the output rule
// (loaderlens/output_rule.hpp, docs/outputs.md): never an input of the run, never through a
// symbolic link, written under a temporary name in its directory and renamed over PATH once
// complete: a full disk, an error or an interrupt never leaves a truncated file under PATH, and an
// old PATH stays as it was until then. Only where streams are allowed (`export -o`, documented as
// such), a FIFO or a device (/dev/stdout, /dev/full) is written directly; elsewhere it is refused.
#pragma once

#include "fd_output_buffer.hpp"
#include "output_checks.hpp"

#include <memory>
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
    // Throws OutputFileError (one line) when PATH cannot be written. `named` is how messages
    // name it (empty: PATH itself).
    OutputFile(const std::string& path, const InputFiles& inputs, bool streams_allowed,
               const std::string& named = "");
    // Removes the temporary file unless commit() renamed it.
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    std::ostream& stream() { return stream_; }
    // Flushes, syncs and renames the file into place; the one-line reason when it cannot (then
    // nothing is left under the temporary name, and PATH is as it was).
    std::optional<std::string> commit();

  private:
    // Opens what the file is written to (setting whole_ when renamed later).
    int open_output(const InputFiles& inputs, bool streams_allowed);

    std::string path_, named_;
    std::unique_ptr<WholeOutput> whole_; // null when writing a stream directly
    int fd_;
    FdOutputBuffer buffer_;
    std::ostream stream_;
};

} // namespace loaderlens::cli
