// SPDX-License-Identifier: MIT
// `loaderlens replay`'s recording, reusable: `check ... replay DATASET` records the reference
// loader the same way and then checks the recording instead of printing its report.
#pragma once

#include "loader_options.hpp"
#include "record_command.hpp"

#include <optional>
#include <string>

namespace loaderlens::cli {

struct ReplayRecording {
    // Set when nothing ran: the exit code (bad input, said in one line).
    std::optional<int> early_exit = exit_bad_input;
    RecordResult result;
    std::optional<std::string> output; // the recording, once closed
    bool written = false;              // false: a write failed and the recording stopped there
};

// Checks the dataset and the loader's options, then runs `loaderlens load` under the recorder.
ReplayRecording record_replay(const LoaderFlags& flags, RecordOptions& record);

} // namespace loaderlens::cli
