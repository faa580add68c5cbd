// SPDX-License-Identifier: MIT
#include "fd_output_buffer.hpp"

#include <cerrno>
#include <unistd.h>

namespace loaderlens::cli {

FdOutputBuffer::FdOutputBuffer(int fd) : fd_(fd) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
}

bool FdOutputBuffer::drain() {
    const char* next = pbase();
    const char* const end = pptr();
    while (error_ == 0 && next < end) {
        const ssize_t written = ::write(fd_, next, static_cast<std::size_t>(end - next));
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0)
            error_ = written < 0 ? errno : EIO;
        else
            next += written;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
}

FdOutputBuffer::int_type FdOutputBuffer::overflow(int_type ch) {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
        *pptr() = traits_type::to_char_type(ch);
        pbump(1);
    }
    return traits_type::not_eof(ch);
}

int FdOutputBuffer::sync() {
    return drain() ? 0 : -1;
}

} // namespace loaderlens::cli
