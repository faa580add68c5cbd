// SPDX-License-Identifier: MIT
// Wakes the fast sampling thread the moment a line is appended to the marker file, so that a
// marker is stamped within a few ms and the moment it marks (an epoch's end, just before its
// workers exit) gets a sample of every tier, instead of waiting for the next 100 ms tick.
//
// inotify on the file for its writes, and on its directory only for creations and renames, to
// follow the file when it appears or is replaced (an editor's rename). Not the directory's
// writes: the recording itself is often written in the same directory, and its WAL writes woke a
// directory watch thousands of times a second (measured: 5,363 wakes in a 2 s recording).
// Watches are added through the descriptors the session holds (/proc/self/fd/N), never through a
// name someone else may have swapped for a link: the file `record` made is watched as that file;
// a file the user named, under its directory's descriptor without following the name.
#pragma once

#include "loaderlens/sidecar.hpp"

#include <cstdint>
#include <string>

namespace loaderlens {

class MarkerWatch {
  public:
    // `enabled` false (or inotify unavailable: no instances left, a seccomp filter) leaves the
    // watch inactive: wait() then only sleeps, and markers are read at the next tick as before.
    explicit MarkerWatch(const Sidecar& sidecar, bool enabled = true);
    ~MarkerWatch();
    MarkerWatch(const MarkerWatch&) = delete;
    MarkerWatch& operator=(const MarkerWatch&) = delete;

    bool active() const { return inotify_fd_ >= 0; }
    // Why it is not active (empty when it is).
    const std::string& problem() const { return problem_; }

    enum class Wake { timeout, file_changed, interrupted };
    // Waits up to `timeout_ms` for a change of the file or for interrupt().
    Wake wait(std::int64_t timeout_ms);
    // Ends a wait() in progress, or the next one; callable from any thread.
    void interrupt();

  private:
    bool drain_events(); // true if one of them was about the file
    void watch_file();   // (again) on whatever file the path names now

    std::string path_, name_; // the file, and its name in its directory
    int directory_fd_ = -1;   // a duplicate held while watched (path_ goes through it)
    bool own_file_ = false;   // path_ is /proc/self/fd/N of the file record made
    int inotify_fd_ = -1;
    int file_watch_ = -1, directory_watch_ = -1;
    int interrupt_fd_ = -1; // eventfd
    std::string problem_;
};

} // namespace loaderlens
