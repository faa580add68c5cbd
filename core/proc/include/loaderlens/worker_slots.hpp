// SPDX-License-Identifier: MIT
// Worker slots: the n-th live worker keeps slot n across generations, so that a plot shows
// "worker 3" as one line even when non-persistent workers are re-forked every epoch.
#pragma once

#include <vector>

namespace loaderlens {

class WorkerSlots {
  public:
    struct Assignment {
        int slot;
        int generation; // how many workers held this slot before
    };
    // Gives a newborn worker the lowest free slot.
    Assignment acquire();
    // Frees the slot of a worker that exited.
    void release(int slot);
    // Undoes acquire() for a process that turned out not to be a worker (recognised after exec).
    void cancel(int slot);

  private:
    std::vector<bool> busy_;
    std::vector<int> times_used_;
};

} // namespace loaderlens
