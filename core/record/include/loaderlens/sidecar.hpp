// SPDX-License-Identifier: MIT
// A file beside the recording that the command and the recorder share while the run lasts: the
// markers file (LOADERLENS_MARKERS), the reference loader's events (LOADERLENS_LOADER_EVENTS) and
// LOADERLENS_SAMPLED. Whoever can write the directory can swap a name there for a link, a FIFO or
// another file at any moment, so once the run has started the recorder never opens one by its
// path: it reads and writes the file it created through the descriptor it kept, and looks at the
// name only through the directory's descriptor, without following it (docs/recording.md,
// "Files beside the recording").
#pragma once

#include <string>

namespace loaderlens {

struct Sidecar {
    // The file as `record` created it (O_EXCL|O_NOFOLLOW); -1 for a file the user named, which
    // the recorder opens under `directory_fd` (O_NOFOLLOW) when it appears. The session
    // duplicates both descriptors: the caller keeps its own.
    int fd = -1;
    int directory_fd = -1; // O_PATH of the directory the name is in
    std::string name;      // the name within it
    std::string path;      // as shown in messages
};

} // namespace loaderlens
