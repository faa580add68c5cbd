// SPDX-License-Identifier: MIT
// Each slot's RSS, PSS and USS in equal time columns over the run: the highest sum of the slot's
// processes sampled in each column, from each process's own rows (no pass over the whole table
// per slot and figure).
#include "diagnosis_parts.hpp"

#include <algorithm>
#include <map>

namespace loaderlens::diagnosis {

std::vector<SlotTimeline> slot_timelines(const RecordingData& data, const ProcessRows& rows,
                                         std::int64_t end_ms, int columns) {
    std::map<int, std::vector<std::int64_t>> slots; // -1: main
    for (const ProcessInfo& p : data.processes) {
        if (p.role == Role::worker && p.slot >= 0) slots[p.slot].push_back(p.id);
        if (p.role == Role::main) slots[-1].push_back(p.id);
    }
    const std::int64_t span = std::max<std::int64_t>(1, end_ms);
    auto column_of = [&](std::int64_t t) { // in double: a damaged recording's times may be any
        const double c = static_cast<double>(std::clamp<std::int64_t>(t, 0, span)) * columns /
                         (static_cast<double>(span) + 1);
        return static_cast<std::size_t>(std::clamp<double>(c, 0, columns - 1));
    };
    // Per column, the sum over the slot's processes at each tick, then the highest tick's sum.
    auto fill = [&](const std::vector<std::int64_t>& ids, bool fast, auto get, int& samples) {
        std::map<std::int64_t, std::int64_t> by_tick;
        for (std::int64_t id : ids) {
            const auto& index = fast ? rows.fast : rows.rollup;
            auto it = index.find(id);
            if (it == index.end()) continue;
            for (std::size_t row : it->second) {
                const Kib value = fast ? get(&data.fast[row].sample, nullptr)
                                       : get(nullptr, &data.rollup[row].sample);
                if (!value) continue;
                const std::int64_t t = fast ? data.fast[row].t_ms : data.rollup[row].t_ms;
                by_tick[t] = saturating_add(by_tick[t], *value);
                ++samples;
            }
        }
        std::vector<Kib> out(static_cast<std::size_t>(columns));
        for (const auto& [t, kb] : by_tick) {
            Kib& cell = out[column_of(t)];
            cell = std::max(cell.value_or(0), kb);
        }
        return out;
    };
    std::vector<SlotTimeline> out;
    for (const auto& [slot, ids] : slots) {
        SlotTimeline line{slot, slot < 0 ? "main" : "worker " + std::to_string(slot), 0, end_ms};
        line.rss = fill(
            ids, true, [](const FastSample* s, const RollupSample*) { return s->rss; },
            line.samples_rss);
        int pss_samples = 0;
        line.pss = fill(
            ids, false, [](const FastSample*, const RollupSample* s) { return s->pss; },
            line.samples_pss);
        line.uss = fill(
            ids, false, [](const FastSample*, const RollupSample* s) { return s->uss(); },
            pss_samples);
        out.push_back(std::move(line));
    }
    return out;
}

} // namespace loaderlens::diagnosis
