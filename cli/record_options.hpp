// SPDX-License-Identifier: MIT
// Record options as the session needs them: intervals, CPU budget, residency, worker match.
#pragma once

#include "loaderlens/session.hpp"
#include "record_command.hpp"

namespace loaderlens::cli {

// The options as the session needs them; false (after a one-line error) for bad input.
bool session_options_from(const RecordOptions& o, SessionOptions& session_options);

} // namespace loaderlens::cli
