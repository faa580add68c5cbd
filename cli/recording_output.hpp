// SPDX-License-Identifier: MIT
// Creates the recording file and the files beside it, under the rules of -o: a taken name goes to
// the next free one, --no-clobber refuses, --force replaces only regular files and never one of
// the run's inputs.
#pragma once

#include "loaderlens/recorder.hpp"
#include "output_checks.hpp"
#include "sidecar_file.hpp"

#include <memory>
#include <string>
#include <vector>

namespace loaderlens::cli {

struct RecordingRequest {
    std::string path; // the expanded -o
    bool overwrite = false, no_clobber = false;
    // Files made beside the recording (".markers"): PATH + suffix.
    std::vector<std::string> sidecar_suffixes;
    InputFiles inputs; // never replaced, even with --force
};

struct CreatedRecorder {
    std::unique_ptr<Recorder> recorder;
    std::string path;  // where it records (the requested name, or the next free one)
    std::string taken; // when path is not the name asked for: the file that made it taken
    std::vector<SidecarFile> sidecars; // in the order of the request's suffixes, absolute paths
};

// Creates the recording. A name is free when the recording, its SQLite companions (-wal, -shm,
// -journal: SQLite would take a stale one for its own) and its sidecars are all absent. When the
// requested name is taken and neither --force nor --no-clobber is set, the recording goes to the
// next free numbered name, so that a monitoring problem never keeps the command from running.
// Throws RecorderError (one line) when no recording can be created.
CreatedRecorder create_recorder(const RecordingRequest& request);

// Closes the recorder and removes what it wrote, sidecars included (the command did not start).
void discard_recording(CreatedRecorder& created);

} // namespace loaderlens::cli
