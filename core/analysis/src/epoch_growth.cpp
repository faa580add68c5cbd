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

std::optional<TimedValue> last_value(const RecordingData&, const ProcessRows& rows,
                                     std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                     std::int64_t to_ms) {
    const auto point = rows.last_in(process_id, figure, from_ms, to_ms);
    if (!point) return std::nullopt;
    return TimedValue{point->t_ms, point->kb, point->age_ms};
}

std::optional<TimedValue> first_value(const RecordingData&, const ProcessRows& rows,
                                      std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                      std::int64_t to_ms) {
    const auto point = rows.first_in(process_id, figure, from_ms, to_ms);
    if (!point) return std::nullopt;
    return TimedValue{point->t_ms, point->kb, point->age_ms};
}

// The data files of the run: those the residency tier followed (it never follows a file mapped
// executable, nor system data); without residency rows, the mapped files that are not libraries.
std::set<std::string> data_files(const RecordingData& data) {
    std::set<std::string> out;
    for (const ResidencyFile& f : data.residency_files)
        if (f.identified()) out.insert(f.path);
    if (!out.empty()) return out;
    for (const ObjectInfo& o : data.objects)
        if ((o.kind == MappingKind::file || o.kind == MappingKind::deleted_file) && !o.is_code())
            out.insert(o.path);
    return out;
}

std::vector<Epoch> find_epochs(const RecordingData& data, std::string& source) {
    // Markers: an end (or a bare "epoch N") closes epoch N; a start opens it.
    std::map<int, Epoch> by_number;
    std::map<int, bool> has_end;
    for (const Marker& m : data.markers) {
        auto parsed = parse_epoch_marker(m.text);
        if (!parsed) continue;
        auto [it, fresh] = by_number.try_emplace(parsed->first, Epoch{parsed->first, -1, -1});
        if (parsed->second) {
            it->second.start_ms = m.t_ms;
            it->second.start_marked = true;
        } else {
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
    const std::set<std::string> data_set = data_files(data);
    std::optional<std::int64_t> first_worker_ms;
    for (const ProcessInfo& p : data.processes)
        if (p.role == Role::worker)
            first_worker_ms = std::min(first_worker_ms.value_or(p.birth_ms), p.birth_ms);
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
                // the next epoch where its start was marked (unmarked, it starts at this end,
                // and the end's own sample, 1 ms later, was left out).
                std::int64_t to = saturating_add(e.end_ms, 100);
                if (n + 1 < epochs.size() && epochs[n + 1].start_marked)
                    to = std::max(e.end_ms, std::min(to, epochs[n + 1].start_ms));
                const ProcessInfo* holder = holder_of(processes, e);
                Kib value;
                std::int64_t age = 0;
                if (holder)
                    if (auto v =
                            value_in(*holder, std::max(e.start_ms, holder->birth_ms), to, true)) {
                        value = v->kb;
                        age = saturating_add(std::max<std::int64_t>(0, e.end_ms - v->t_ms),
                                             v->age_ms);
                    }
                figure.at_epoch_end.push_back(value);
                figure.age_ms.push_back(age);
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
            // Main's start-up (imports, building the dataset) runs before the loader starts: its
            // growth is judged from its first worker's birth on (a job that built its LMDB in
            // main got a critical "leak" of 42.7 MiB over the run).
            const std::int64_t start =
                slot < 0 ? std::max(longest->birth_ms, first_worker_ms.value_or(0))
                         : longest->birth_ms;
            const std::int64_t from = saturating_add(start, settle),
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
        // Each data file of at least a MiB in one of the slot's processes, by the figure
        // model's merged series (pagemap at the residency rate, smaps at the maps rate): the
        // maps tier alone is what the CPU budget stretches first (13-48 s between samples seen
        // on a loaded node), pagemap keeps its rate and the epoch-end samples.
        std::set<std::string> slot_files; // in path order: object ids differ between a
                                          // recording and its part of a merged one
        for (const ProcessInfo* p : processes)
            for (const std::string& path : rows.files_of(p->id))
                if (data_set.contains(path))
                    for (const FigurePoint& point : rows.file_points(p->id, path, FileFigure::rss))
                        if (point.kb >= 1024) {
                            slot_files.insert(path);
                            break;
                        }
        for (const std::string& path : slot_files) {
            GrowthFigure figure{"file", path};
            fill(figure,
                 [&](const ProcessInfo& p, std::int64_t from, std::int64_t to,
                     bool last) -> std::optional<TimedValue> {
                     const FigurePoints& points = rows.file_points(p.id, path, FileFigure::rss);
                     const auto found = last ? FigureModel::last_in(points, from, to)
                                             : FigureModel::first_in(points, from, to);
                     if (!found) return std::nullopt;
                     return TimedValue{found->t_ms, found->kb, found->age_ms};
                 });
            g.figures.push_back(std::move(figure));
        }
        out.push_back(std::move(g));
    }
    return out;
}

} // namespace loaderlens::diagnosis
