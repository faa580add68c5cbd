// SPDX-License-Identifier: MIT
// Epochs (from markers, else from worker generations) and each slot's figures at every epoch's
// end; without epochs, each slot's figures over its life after a settling time.
#include "diagnosis_parts.hpp"
#include "findings_thresholds.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace loaderlens::diagnosis {

namespace {

template <typename Pick>
std::optional<TimedValue> pick_value(const RecordingData& data, const ProcessRows& rows,
                                     std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                     std::int64_t to_ms, Pick pick_last) {
    const bool fast = source_of(figure) == FigureSource::fast;
    const auto& index = fast ? rows.fast : rows.rollup;
    auto it = index.find(process_id);
    if (it == index.end()) return std::nullopt;
    std::optional<TimedValue> out;
    for (std::size_t row : it->second) {
        const std::int64_t t = fast ? data.fast[row].t_ms : data.rollup[row].t_ms;
        if (t < from_ms || t > to_ms) continue;
        if (const Kib value = fast ? figure_of(data.fast[row].sample, figure)
                                   : figure_of(data.rollup[row].sample, figure)) {
            out = TimedValue{t, *value};
            if (!pick_last) break;
        }
    }
    return out;
}

// "epoch 3", "epoch 3 end", "Epoch 3 start": the number and whether it is a start.
std::optional<std::pair<int, bool>> parse_epoch_marker(const std::string& text) {
    std::string lower;
    for (char c : text)
        lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::size_t at = lower.find_first_not_of(" \t");
    if (at == std::string::npos || lower.compare(at, 5, "epoch") != 0) return std::nullopt;
    at += 5;
    while (at < lower.size() && (lower[at] == ' ' || lower[at] == '\t'))
        ++at;
    std::size_t digits = at;
    while (digits < lower.size() && std::isdigit(static_cast<unsigned char>(lower[digits])))
        ++digits;
    if (digits == at || digits - at > 9) return std::nullopt;
    const int number = std::stoi(lower.substr(at, digits - at));
    const std::string rest = lower.substr(digits);
    const bool start =
        rest.find("start") != std::string::npos || rest.find("begin") != std::string::npos;
    return std::pair{number, start};
}

// The slot's process that held it through the epoch: the one whose life overlaps the epoch most
// (PyTorch forks the next generation before the last one's exit is seen, so "alive at the end"
// can be two processes).
const ProcessInfo* holder_of(const std::vector<const ProcessInfo*>& slot, const Epoch& e) {
    const ProcessInfo* holder = nullptr;
    std::int64_t best = -1;
    for (const ProcessInfo* p : slot) {
        const std::int64_t from = std::max(p->birth_ms, e.start_ms);
        const std::int64_t to = std::min(p->exit_ms.value_or(INT64_MAX), e.end_ms);
        if (p->birth_ms > e.end_ms || to < from) continue;
        if (saturating_sub(to, from) > best) {
            best = saturating_sub(to, from);
            holder = p;
        }
    }
    return holder;
}

} // namespace

ProcessRows::ProcessRows(const RecordingData& data) {
    for (std::size_t i = 0; i < data.fast.size(); ++i)
        fast[data.fast[i].sample.process_id].push_back(i);
    for (std::size_t i = 0; i < data.rollup.size(); ++i)
        rollup[data.rollup[i].sample.process_id].push_back(i);
}

std::optional<TimedValue> last_value(const RecordingData& data, const ProcessRows& rows,
                                     std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                     std::int64_t to_ms) {
    return pick_value(data, rows, process_id, figure, from_ms, to_ms, true);
}

std::optional<TimedValue> first_value(const RecordingData& data, const ProcessRows& rows,
                                      std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                      std::int64_t to_ms) {
    return pick_value(data, rows, process_id, figure, from_ms, to_ms, false);
}

std::vector<Epoch> find_epochs(const RecordingData& data, std::string& source) {
    // Markers: an end (or a bare "epoch N") closes epoch N; a start opens it.
    std::map<int, Epoch> by_number;
    std::map<int, bool> has_end;
    for (const Marker& m : data.markers) {
        auto parsed = parse_epoch_marker(m.text);
        if (!parsed) continue;
        auto [it, fresh] = by_number.try_emplace(parsed->first, Epoch{parsed->first, -1, -1});
        if (parsed->second)
            it->second.start_ms = m.t_ms;
        else {
            it->second.end_ms = m.t_ms;
            has_end[parsed->first] = true;
        }
    }
    std::vector<Epoch> epochs;
    std::int64_t previous_end = 0;
    for (auto it = by_number.begin(); it != by_number.end(); ++it) {
        Epoch e = it->second;
        if (e.end_ms < 0) { // only a start: it ends where the next starts
            auto next = std::next(it);
            if (next == by_number.end() || next->second.start_ms < 0) continue;
            e.end_ms = next->second.start_ms;
        }
        if (e.start_ms < 0) e.start_ms = previous_end;
        previous_end = e.end_ms;
        epochs.push_back(e);
    }
    if (!epochs.empty()) {
        source = "markers";
        return epochs;
    }
    // Worker generations: PyTorch re-forks its workers every epoch unless persistent.
    std::map<int, Epoch> generations;
    for (const ProcessInfo& p : data.processes) {
        if (p.role != Role::worker || p.generation < 0) continue;
        auto [it, fresh] = generations.try_emplace(
            p.generation, Epoch{p.generation, p.birth_ms, p.exit_ms.value_or(-1)});
        it->second.start_ms = std::min(it->second.start_ms, p.birth_ms);
        it->second.end_ms = std::max(it->second.end_ms, p.exit_ms.value_or(-1));
    }
    if (generations.size() < 2) return {};
    for (auto& [number, e] : generations)
        if (e.end_ms >= e.start_ms) epochs.push_back(e);
    if (epochs.size() >= 2)
        source = "generations";
    else
        epochs.clear();
    return epochs;
}

std::vector<SlotGrowth> slot_growth(const RecordingData& data, const ProcessRows& rows,
                                    const std::vector<Epoch>& epochs, std::int64_t end_ms) {
    std::map<int, std::vector<const ProcessInfo*>> slots; // -1: main
    for (const ProcessInfo& p : data.processes) {
        if (p.role == Role::worker && p.slot >= 0) slots[p.slot].push_back(&p);
        if (p.role == Role::main) slots[-1].push_back(&p);
    }
    // Mapped files per process: (process, object) -> rows in time order.
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<const MapRow*>> file_rows;
    std::map<std::int64_t, const ObjectInfo*> objects;
    for (const ObjectInfo& o : data.objects)
        if (o.kind == MappingKind::file || o.kind == MappingKind::deleted_file) objects[o.id] = &o;
    for (const MapRow& row : data.maps)
        if (objects.contains(row.object_id))
            file_rows[{row.process_id, row.object_id}].push_back(&row);

    std::vector<SlotGrowth> out;
    for (const auto& [slot, processes] : slots) {
        SlotGrowth g;
        g.slot = slot;
        g.label = slot < 0 ? "main" : "worker " + std::to_string(slot);
        g.generations = static_cast<int>(processes.size());
        // A figure of the slot: at each epoch's end (its holder then), or over a lifetime.
        auto fill = [&](GrowthFigure& figure, auto value_in) {
            std::optional<std::int64_t> monotone_process;
            bool monotone = epochs.size() >= static_cast<std::size_t>(thresholds::monotone_epochs);
            Kib previous;
            for (std::size_t n = 0; n < epochs.size(); ++n) {
                const Epoch& e = epochs[n];
                // The epoch-end marker's sample comes a few ms after the marker; never a row of
                // the next epoch.
                std::int64_t to = saturating_add(e.end_ms, 100);
                if (n + 1 < epochs.size())
                    to = std::max(e.end_ms, std::min(to, epochs[n + 1].start_ms));
                const ProcessInfo* holder = holder_of(processes, e);
                Kib value;
                if (holder)
                    if (auto v =
                            value_in(*holder, std::max(e.start_ms, holder->birth_ms), to, true))
                        value = v->kb;
                figure.at_epoch_end.push_back(value);
                if (!holder || (monotone_process && *monotone_process != holder->id))
                    monotone = false;
                if (holder) monotone_process = holder->id;
                if (previous && value) {
                    const auto noise = std::max<std::int64_t>(
                        thresholds::growth_noise_kb,
                        static_cast<std::int64_t>(thresholds::growth_noise_share * *previous));
                    if (saturating_sub(*value, *previous) <= noise) monotone = false;
                } else if (&e != &epochs.front()) {
                    monotone = false;
                }
                previous = value;
            }
            figure.monotone = monotone;
            if (!epochs.empty() || processes.empty()) return;
            // No epochs: the longest-lived holder, after it settled.
            const ProcessInfo* longest = nullptr;
            auto life = [&](const ProcessInfo* p) {
                return saturating_sub(p->exit_ms.value_or(end_ms), p->birth_ms);
            };
            for (const ProcessInfo* p : processes)
                if (!longest || life(p) > life(longest)) longest = p;
            const std::int64_t settle = std::max<std::int64_t>(
                thresholds::settle_ms,
                static_cast<std::int64_t>(thresholds::settle_share * life(longest)));
            const std::int64_t from = saturating_add(longest->birth_ms, settle),
                               to = longest->exit_ms.value_or(end_ms);
            if (from >= to) return;
            auto first = value_in(*longest, from, to, false);
            auto last = value_in(*longest, from, to, true);
            if (!first || !last) return;
            figure.trend_from_ms = first->t_ms;
            figure.trend_to_ms = last->t_ms;
            figure.trend_first = first->kb;
            figure.trend_last = last->kb;
        };
        for (Figure f : {Figure::rss, Figure::pss, Figure::uss, Figure::private_dirty,
                         Figure::rss_anon, Figure::rss_file}) {
            GrowthFigure figure{std::string(to_string(f))};
            fill(figure, [&](const ProcessInfo& p, std::int64_t from, std::int64_t to, bool last) {
                return last ? last_value(data, rows, p.id, f, from, to)
                            : first_value(data, rows, p.id, f, from, to);
            });
            g.figures.push_back(std::move(figure));
        }
        // Each mapped file of at least a MiB in one of the slot's processes.
        std::set<std::int64_t> slot_files;
        for (const ProcessInfo* p : processes) // the process's files: keys (id, object) in order
            for (auto it = file_rows.lower_bound({p->id, INT64_MIN});
                 it != file_rows.end() && it->first.first == p->id; ++it)
                for (const MapRow* row : it->second)
                    if (row->figures.rss_kb >= 1024) slot_files.insert(it->first.second);
        // In path order: object ids differ between a recording and its part of a merged one
        // (objects two nodes share get one id there), and the report must not.
        std::vector<std::int64_t> by_path(slot_files.begin(), slot_files.end());
        std::stable_sort(by_path.begin(), by_path.end(), [&](std::int64_t a, std::int64_t b) {
            return objects[a]->path < objects[b]->path;
        });
        for (const std::int64_t object : by_path) {
            GrowthFigure figure{"file", objects[object]->path};
            fill(figure,
                 [&](const ProcessInfo& p, std::int64_t from, std::int64_t to,
                     bool last) -> std::optional<TimedValue> {
                     auto it = file_rows.find({p.id, object});
                     if (it == file_rows.end()) return std::nullopt;
                     std::optional<TimedValue> found;
                     for (const MapRow* row : it->second) {
                         if (row->t_ms < from || row->t_ms > to) continue;
                         found = TimedValue{row->t_ms, row->figures.rss_kb};
                         if (!last) break;
                     }
                     return found;
                 });
            g.figures.push_back(std::move(figure));
        }
        out.push_back(std::move(g));
    }
    return out;
}

} // namespace loaderlens::diagnosis
