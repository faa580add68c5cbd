// SPDX-License-Identifier: MIT
#include "loaderlens/lanes.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace loaderlens {

Lanes lanes(const RecordingData& data) {
    Lanes out;
    std::map<std::pair<int, int>, WorkerLane> slots; // by (part, slot)
    std::unordered_map<std::int64_t, const ProcessInfo*> by_id;
    for (const ProcessInfo& p : data.processes) {
        by_id[p.id] = &p;
        LaneProcess lane{p.id,       p.key.pid, p.role == Role::worker ? p.generation : -1,
                         p.birth_ms, p.exit_ms, p.exit_status};
        if (p.role == Role::worker && p.slot >= 0) {
            WorkerLane& slot = slots[{p.part, p.slot}];
            slot.slot = p.slot;
            slot.part = p.part;
            slot.generations.push_back(lane);
        } else if (p.role == Role::main) {
            out.mains.push_back(lane);
        } else {
            out.helpers.push_back(lane);
        }
    }
    for (auto& [key, lane] : slots) {
        std::sort(lane.generations.begin(), lane.generations.end(),
                  [](const LaneProcess& a, const LaneProcess& b) {
                      return std::tie(a.generation, a.birth_ms) <
                             std::tie(b.generation, b.birth_ms);
                  });
        out.workers.push_back(std::move(lane));
    }
    out.markers = data.markers;
    for (const auto& [t, u] : data.unavailable) {
        UnavailableSpan span{u.process_id, u.tier, u.reason, t, {}};
        if (auto it = by_id.find(u.process_id); it != by_id.end()) span.to_ms = it->second->exit_ms;
        out.unavailable.push_back(std::move(span));
    }
    for (const auto& [t, s] : data.tier_stats)
        out.tiers.push_back({s.tier, t, s.interval_ms, s.cpu_us_per_run});
    std::stable_sort(
        out.tiers.begin(), out.tiers.end(),
        [](const TierInterval& a, const TierInterval& b) { return a.from_ms < b.from_ms; });
    return out;
}

} // namespace loaderlens
