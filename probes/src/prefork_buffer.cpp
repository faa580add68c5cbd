// SPDX-License-Identifier: MIT
#include "prefork_buffer.hpp"

#include "loaderlens/probes/loader.hpp"

#include <cerrno>
#include <cstring>
#include <string>
#include <sys/mman.h>

namespace loaderlens::probes {

PreforkBuffer::PreforkBuffer(std::int64_t mib) : bytes_(static_cast<std::size_t>(mib) << 20) {
    if (bytes_ == 0) return;
    void* map = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        throw LoaderError("--prefork-anon: cannot allocate " + std::to_string(mib) +
                          " MiB: " + std::strerror(errno));
    data_ = map;
    // Every page written, none the zero page: all of it resident in main, then shared by fork.
    std::memset(data_, 0x5a, bytes_);
}

PreforkBuffer::~PreforkBuffer() {
    if (data_) munmap(data_, bytes_);
}

} // namespace loaderlens::probes
