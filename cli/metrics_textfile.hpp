// SPDX-License-Identifier: MIT
// `record --metrics-textfile DIR/NAME.prom` (docs/metrics.md): while recording, a thread reads
// the recording being written through the one reading API (Recording::read_new with a cursor) and
// rewrites the file every second with the latest figures per role and worker slot, in the
// Prometheus text format 0.0.4 that node_exporter's textfile collector reads. Each write goes to
// a temporary file beside it (NAME.prom.PID.tmp: not *.prom, so never read half-written) renamed
// over it. Both are made relative to the directory opened once, when the path is checked
// (openat/renameat, O_NOFOLLOW; a directory owned by this user or root): a directory of the path
// swapped for a symbolic link mid-run redirects nothing (the output rule, docs/outputs.md). A
// failed write is one warning; the recording and the command go on. At the end the file keeps the
// last figures with loaderlens_recording_live 0.
#pragma once

#include "loaderlens/live_metrics.hpp"
#include "loaderlens/recording.hpp"
#include "output_checks.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>
#include <utility>

namespace loaderlens::cli {

class MetricsTextfile {
  public:
    // Why `path` cannot take the textfile, in one line naming it: a name that does not end in
    // .prom, a directory that is missing or where no file can be made, an existing file that is
    // not a regular one or is a recording, one of `run_files` (the recording, the command's
    // inputs), a directory another user owns. Nothing when it can; the directory stays open for
    // the MetricsTextfile of that path.
    static std::optional<std::string> problem(const std::string& path, const InputFiles& run_files);

    // Starts the thread: writes `path` at once, then every second, from `recording`.
    MetricsTextfile(std::string path, std::string recording);
    ~MetricsTextfile();
    MetricsTextfile(const MetricsTextfile&) = delete;
    MetricsTextfile& operator=(const MetricsTextfile&) = delete;

    // The warning the thread has for the user (once: the first failure), for the caller to print
    // between its status lines.
    std::optional<std::string> take_warning();

    // Stops the rewriting, reads what was committed since the last read and closes the
    // recording: a reader still open would keep the recorder from folding its WAL in at the end.
    void stop_reading();
    // Writes the file left at the end (live 0); a warning not yet taken is printed now.
    void write_final();

  private:
    void run();
    bool read();
    void write(const std::string& text);
    void warn(const std::string& message);

    std::string path_, name_, temp_, recording_path_;
    std::pair<dev_t, ino_t> recording_identity_{0, 0}; // the file the thread opened
    int dir_fd_ = -1; // the directory, opened by problem() (or here when it was not called)
    std::unique_ptr<Recording> recording_; // the thread's, then stop_reading()'s
    Cursor cursor_;
    LiveMetrics metrics_;
    bool reading_failed_ = false;

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    bool warned_ = false;
    std::optional<std::string> warning_;
    std::thread thread_;
};

} // namespace loaderlens::cli
