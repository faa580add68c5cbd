// SPDX-License-Identifier: MIT
// The memory the loader moves batches through: the shared-memory batch buffers the workers fill
// (PyTorch puts each batch's tensors in /dev/shm), and the locked staging buffers of pin_memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loaderlens::probes {

// A /dev/shm segment, unlinked as soon as it is mapped (as PyTorch's file_descriptor sharing
// strategy does): it counts in /dev/shm usage and in RssShmem of every process that touches it,
// and it cannot be left behind when the loader is killed.
class SharedSegment {
  public:
    explicit SharedSegment(std::size_t bytes);
    ~SharedSegment();
    SharedSegment(const SharedSegment&) = delete;
    SharedSegment& operator=(const SharedSegment&) = delete;
    std::byte* data() const { return data_; }
    std::size_t size() const { return bytes_; }

  private:
    std::byte* data_ = nullptr;
    std::size_t bytes_ = 0;
};

// pin_memory's staging: shared (page-locked host memory shows as shmem) and locked, one block per
// batch in flight, each locked on first use, so the locked total grows with the blocks cached,
// like PyTorch's CachingHostAllocator.
class PinnedStaging {
  public:
    PinnedStaging(std::size_t blocks, std::size_t block_bytes);
    ~PinnedStaging();
    PinnedStaging(const PinnedStaging&) = delete;
    PinnedStaging& operator=(const PinnedStaging&) = delete;
    // The block for a batch, locked the first time it is used.
    std::byte* block(std::int64_t batch_number);
    std::size_t size() const { return blocks_ * block_bytes_; }
    // Why a block could not be locked (RLIMIT_MEMLOCK...), empty while all are locked.
    const std::string& problem() const { return problem_; }

  private:
    std::byte* data_ = nullptr;
    std::size_t blocks_, block_bytes_;
    std::vector<bool> locked_;
    std::string problem_;
};

// --cow-heap: a heap of small objects built by the main process before it forks, which workers
// visit the way CPython visits a list of Python objects: reading an object writes its reference
// count, so every page a worker visits becomes a private copy (copy-on-read).
class CowHeap {
  public:
    CowHeap(std::int64_t mib, std::int64_t dataset_records);
    ~CowHeap();
    CowHeap(const CowHeap&) = delete;
    CowHeap& operator=(const CowHeap&) = delete;
    // Touches the objects of sample `index`: objects index, index + N, index + 2N, ... (N the
    // dataset size), as objects created in a loop end up spread over the whole heap.
    void visit(std::int64_t index);
    std::size_t size() const { return bytes_; }

  private:
    struct Object {
        std::int64_t refcount;
        std::int64_t payload[7];
    };
    Object* objects_ = nullptr;
    std::size_t bytes_ = 0;
    std::int64_t count_ = 0;
    std::int64_t records_ = 1;
};

} // namespace loaderlens::probes
