// SPDX-License-Identifier: MIT
#include "shared_buffers.hpp"

#include "loaderlens/probes/loader.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {
const std::size_t page_size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
std::size_t round_up_to_page(std::size_t bytes) {
    return (bytes + page_size - 1) / page_size * page_size;
}
} // namespace

SharedSegment::SharedSegment(std::size_t bytes) : bytes_(round_up_to_page(bytes)) {
    static std::atomic<int> counter{0};
    const std::string name =
        "/loaderlens-batches-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        throw LoaderError("/dev/shm" + name +
                          ": cannot create the batch buffers: " + std::strerror(errno));
    shm_unlink(name.c_str());
    if (ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
        int error = errno;
        ::close(fd);
        throw LoaderError("/dev/shm: cannot size the batch buffers to " + std::to_string(bytes_) +
                          " bytes: " + std::strerror(error));
    }
    void* map = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int error = errno;
    ::close(fd);
    if (map == MAP_FAILED)
        throw LoaderError("/dev/shm: cannot map the batch buffers: " +
                          std::string(std::strerror(error)));
    data_ = static_cast<std::byte*>(map);
}

SharedSegment::~SharedSegment() {
    if (data_) munmap(data_, bytes_);
}

PinnedStaging::PinnedStaging(std::size_t blocks, std::size_t block_bytes)
    : blocks_(blocks), block_bytes_(round_up_to_page(block_bytes)), locked_(blocks, false) {
    void* map = mmap(nullptr, blocks_ * block_bytes_, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        throw LoaderError("pin: cannot map " + std::to_string(blocks_ * block_bytes_) +
                          " bytes of staging: " + std::strerror(errno));
    data_ = static_cast<std::byte*>(map);
}

PinnedStaging::~PinnedStaging() {
    if (data_) munmap(data_, blocks_ * block_bytes_);
}

std::byte* PinnedStaging::block(std::int64_t batch_number) {
    const auto index = static_cast<std::size_t>(batch_number) % blocks_;
    std::byte* block = data_ + index * block_bytes_;
    if (!locked_[index]) {
        locked_[index] = true;
        if (mlock(block, block_bytes_) != 0 && problem_.empty())
            problem_ = std::string("mlock failed: ") + std::strerror(errno) +
                       " (RLIMIT_MEMLOCK too low?): staging is not locked";
    }
    return block;
}

CowHeap::CowHeap(std::int64_t mib, std::int64_t dataset_records)
    : bytes_(static_cast<std::size_t>(mib) << 20),
      records_(dataset_records > 0 ? dataset_records : 1) {
    count_ = static_cast<std::int64_t>(bytes_ / sizeof(Object));
    if (count_ == 0) return;
    void* map = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        throw LoaderError("--cow-heap: cannot allocate " + std::to_string(mib) +
                          " MiB: " + std::strerror(errno));
    // CPython's object arenas are small mmaps that never become huge pages; a huge page would be
    // copied or split differently on the first write after fork.
    madvise(map, bytes_, MADV_NOHUGEPAGE);
    objects_ = static_cast<Object*>(map);
    for (std::int64_t i = 0; i < count_; ++i)
        objects_[i] = Object{1, {i, i, i, i, i, i, i}};
}

CowHeap::~CowHeap() {
    if (objects_) munmap(objects_, bytes_);
}

void CowHeap::visit(std::int64_t index) {
    if (count_ == 0) return;
    // More samples than objects: each sample owns one object.
    const std::int64_t stride = records_ <= count_ ? records_ : count_;
    for (std::int64_t i = index % stride; i < count_; i += stride) {
        // Py_INCREF then Py_DECREF: the value is unchanged, the page is written.
        auto* refcount = static_cast<volatile std::int64_t*>(&objects_[i].refcount);
        *refcount = *refcount + 1;
        *refcount = *refcount - 1;
    }
}

} // namespace loaderlens::probes
