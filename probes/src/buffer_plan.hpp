// SPDX-License-Identifier: MIT
// The memory the loader moves batches through, and what its options make it allocate, checked
// before anything runs: too big for /dev/shm or for the machine is bad input (exit 2), not a
// worker's SIGBUS, std::bad_alloc or the OOM killer midway.
#pragma once

#include "loaderlens/probes/loader.hpp"

#include <cstddef>

namespace loaderlens::probes {

// Sized from the largest batch that can occur.
struct BufferPlan {
    int in_flight = 1;          // batches: prefetch x workers (x 1 with workers == 0)
    std::size_t slot_bytes = 0; // one batch buffer
    std::size_t ring_bytes = 0; // all of them
};

// The plan for `o` over `layout`; throws LoaderError when the buffers would not fit in the free
// space of /dev/shm (with workers) or overflow.
BufferPlan plan_buffers(const LoaderOptions& o, const DatasetLayout& layout);

// Throws LoaderError naming the option when what it asks for would not fit in the machine's
// memory: --cow-heap, the batch buffer of --workers 0, --pin's staging, and the bitmaps that note
// which records each process read (more than a quarter of the memory).
void check_memory(const LoaderOptions& o, const DatasetLayout& layout, const BufferPlan& plan);

} // namespace loaderlens::probes
