// SPDX-License-Identifier: MIT
#include "lean_recorder.hpp"

#include <climits>
#include <csignal>
#include <iostream>
#include <string>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

struct sigaction inherited_pipe {
}, inherited_child{};
bool remembered = false;

std::string found_path;

} // namespace

void remember_dispositions_before_exec() {
    remembered = ::sigaction(SIGPIPE, nullptr, &inherited_pipe) == 0 &&
                 ::sigaction(SIGCHLD, nullptr, &inherited_child) == 0;
}

const char* lean_recorder_path() {
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return nullptr;
    const std::string exe(self, static_cast<std::size_t>(n));
    const std::string dir = exe.substr(0, exe.rfind('/') + 1);
    for (const std::string& candidate :
         {dir + LOADERLENS_LIBEXEC_FROM_BIN "/loaderlens-record", dir + "loaderlens-record"})
        if (::access(candidate.c_str(), X_OK) == 0) {
            found_path = candidate;
            return found_path.c_str();
        }
    return nullptr;
}

void exec_lean_recorder(char** argv) {
    if (!remembered) return;
    const char* path = lean_recorder_path();
    if (!path) return;
    std::cout.flush();
    struct sigaction own_pipe {
    }, own_child{};
    ::sigaction(SIGPIPE, &inherited_pipe, &own_pipe);
    ::sigaction(SIGCHLD, &inherited_child, &own_child);
    ::execv(path, argv);
    ::sigaction(SIGPIPE, &own_pipe, nullptr);
    ::sigaction(SIGCHLD, &own_child, nullptr);
}

} // namespace loaderlens::cli
