// SPDX-License-Identifier: MIT
#include "loaderlens/worker_slots.hpp"

namespace loaderlens {

WorkerSlots::Assignment WorkerSlots::acquire() {
    std::size_t slot = 0;
    while (slot < busy_.size() && busy_[slot])
        ++slot;
    if (slot == busy_.size()) {
        busy_.push_back(false);
        times_used_.push_back(0);
    }
    busy_[slot] = true;
    return {static_cast<int>(slot), times_used_[slot]++};
}

void WorkerSlots::release(int slot) {
    if (slot >= 0 && static_cast<std::size_t>(slot) < busy_.size()) busy_[slot] = false;
}

void WorkerSlots::cancel(int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= busy_.size()) return;
    busy_[slot] = false;
    --times_used_[slot];
}

} // namespace loaderlens
