// SPDX-License-Identifier: MIT
// What `loaderlens` and the recorder it execs (loaderlens-record, record_main.cpp) both do around
// a command: standard output through a buffer that keeps why a write failed, and one error line.
#pragma once

namespace loaderlens::cli {

// std::cout writes through an FdOutputBuffer on STDOUT_FILENO from now on.
void use_standard_output_buffer();

// Flushes std::cout. A full disk or a closed pipe (`export ... | head -1`) must not pass for a
// complete output: one line, and exit 1 where the command would have exited 0.
int finish_standard_output(int exit_code);

} // namespace loaderlens::cli
