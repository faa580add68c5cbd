// SPDX-License-Identifier: MIT
// Follows the marker file named by LOADERLENS_MARKERS: every complete line appended to it by any
// program (e.g. `print(f"epoch {e}", file=open(os.environ["LOADERLENS_MARKERS"], "a"))`) becomes a
// marker stamped with the time it was read (within one fast tick), or, for a line
// "@BOOTTIME_NS text", with that exact time (Python: time.clock_gettime_ns(time.CLOCK_BOOTTIME)).
//
// The file is either the one `record` created (read through the descriptor kept since, whatever
// its name becomes) or one the user named (opened under its directory's descriptor, never through
// a link, only while it is a regular file of the owner it had when first seen). A name swapped
// for anything else is said once (take_warnings) and not read. Each poll reads at most 1 MiB and
// a line is at most 4 KiB (the rest of a longer line is dropped).
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/sidecar.hpp"
#include "loaderlens/types.hpp"

#include <optional>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace loaderlens {

class MarkerTail {
  public:
    // A file the user named: it may appear later, be rewritten or replaced by its owner.
    explicit MarkerTail(const std::string& path);
    // `sidecar.fd` >= 0: the file `record` made; otherwise as above, under sidecar.directory_fd.
    explicit MarkerTail(const Sidecar& sidecar);
    ~MarkerTail();
    MarkerTail(const MarkerTail&) = delete;
    MarkerTail& operator=(const MarkerTail&) = delete;

    std::vector<Marker> poll(const RecordingClock& clock);
    const std::string& path() const { return path_; }
    // What happened to the name since the last call, one line each (said once per kind).
    std::vector<std::string> take_warnings();

    static constexpr long long most_read_per_poll = 1 << 20;
    static constexpr std::size_t longest_line = 4096;

  private:
    // Looks at the name (never following it) and opens, for a file the user named, what it now
    // names when that may be read.
    void follow_name();
    // Whether the file was rewritten since the last poll: truncated, or rewritten in place
    // (open(path, "w")) to the same or a greater length, which the size alone cannot tell: the
    // last bytes read are then no longer where they were.
    bool rewritten(const struct stat& st) const;
    void start_over();
    void warn(std::string text);

    std::string path_;
    std::string name_;
    int directory_fd_ = -1;
    int fd_ = -1;
    bool own_ = false;     // fd_ is the file record made: never another
    bool stopped_ = false; // the name became something not to read
    std::optional<uid_t> owner_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    long long offset_ = 0;
    std::string partial_;
    bool skipping_ = false; // dropping the rest of a line longer than longest_line
    std::string last_read_; // the last bytes before offset_ (up to 64)
    timespec mtime_{};
    long long size_ = -1;
    std::vector<std::string> warnings_;
    std::vector<std::string> warned_;
};

} // namespace loaderlens
