// SPDX-License-Identifier: MIT
// A stream buffer over a file descriptor that keeps the errno of the first write that failed:
// std::cout and std::ofstream only say that something failed, not whether the disk is full or
// the reader closed the pipe.
#pragma once

#include <array>
#include <streambuf>

namespace loaderlens::cli {

class FdOutputBuffer : public std::streambuf {
  public:
    explicit FdOutputBuffer(int fd);
    // The errno of the first failed write; 0 while every write succeeded.
    int error() const { return error_; }

  protected:
    int_type overflow(int_type ch) override;
    int sync() override;

  private:
    // Writes out what is buffered; false once a write failed (later output is dropped).
    bool drain();

    int fd_;
    int error_ = 0;
    // Not zeroed: only what was put is written out, and 64 KiB zeroed at start-up would stay
    // resident in the recorder, which prints nothing with -q.
    std::array<char, 1 << 16> buffer_;
};

} // namespace loaderlens::cli
