// SPDX-License-Identifier: MIT
#include "standard_output.hpp"

#include "commands.hpp"
#include "fd_output_buffer.hpp"
#include "loaderlens/one_line.hpp"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <unistd.h>

namespace loaderlens::cli {

namespace {
// Never destroyed: the runtime flushes std::cout after every static object is gone.
FdOutputBuffer* const standard_output = new FdOutputBuffer(STDOUT_FILENO);
} // namespace

void use_standard_output_buffer() {
    std::cout.rdbuf(standard_output);
}

int finish_standard_output(int exit_code) {
    std::cout.flush();
    const int error = standard_output->error();
    if (error == 0) return exit_code;
    print_error(std::string("standard output: cannot write: ") + std::strerror(error) +
                (error == EPIPE ? " (the reader closed it)" : ""));
    return exit_code == exit_ok ? exit_internal : exit_code;
}

void print_error(const std::string& message) {
    // One line whatever the message holds: a file name or a library's text with a newline.
    std::cerr << "loaderlens: " << one_line(message) << "\n";
}

} // namespace loaderlens::cli
