// SPDX-License-Identifier: MIT
#include "loaderlens/sample_ack.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace loaderlens {

SampleAck::SampleAck(const Sidecar& sidecar) {
    if (sidecar.fd >= 0) fd_ = ::fcntl(sidecar.fd, F_DUPFD_CLOEXEC, 0);
}

SampleAck::~SampleAck() {
    if (fd_ >= 0) ::close(fd_);
}

void SampleAck::write(std::int64_t marker_read_boot_ns) {
    if (fd_ < 0) return;
    const std::string n = std::to_string(marker_read_boot_ns);
    const std::string line = n + " " + n + "\n";
    // Same length or longer than the last line (the numbers only grow): no stale tail remains.
    if (::pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
        ::close(fd_); // a full disk or a removed file: stop trying, the program stops waiting
        fd_ = -1;
    }
}

} // namespace loaderlens
