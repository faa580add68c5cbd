// SPDX-License-Identifier: MIT
// The kind of a file that is not the regular file a message expected, in words.
#pragma once

#include <string>
#include <sys/types.h>

namespace loaderlens {

// "a symbolic link", "a FIFO", "a character device", "a block device", "a directory", "a socket",
// "a regular file".
std::string file_kind(mode_t mode);

} // namespace loaderlens
