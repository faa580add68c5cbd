// SPDX-License-Identifier: MIT
#include "loaderlens/sampler_problems.hpp"

#include <cerrno>
#include <cstring>

namespace loaderlens {

std::string unavailable_reason(const std::string& what, int error) {
    if (error == EACCES || error == EPERM)
        return what + ": permission denied (needs the same user or CAP_SYS_PTRACE)";
    if (error == ENOENT) return what + ": not provided by this kernel";
    return what + ": " + std::strerror(error);
}

} // namespace loaderlens
