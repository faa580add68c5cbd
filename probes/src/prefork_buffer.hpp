// SPDX-License-Identifier: MIT
// --prefork-anon: anonymous memory main fills before it forks and keeps, as `np.load(path)`
// without mmap or a tensor built in Dataset.__init__ would. Workers inherit it copy-on-write and
// never write it, so it stays shared: RSS counts it in every process, PSS splits it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loaderlens::probes {

class PreforkBuffer {
  public:
    explicit PreforkBuffer(std::int64_t mib);
    ~PreforkBuffer();
    PreforkBuffer(const PreforkBuffer&) = delete;
    PreforkBuffer& operator=(const PreforkBuffer&) = delete;
    std::size_t size() const { return bytes_; }

  private:
    void* data_ = nullptr;
    std::size_t bytes_ = 0;
};

} // namespace loaderlens::probes
