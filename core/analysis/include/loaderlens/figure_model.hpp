// SPDX-License-Identifier: MIT
// One figure model: for every process and figure, one series merged from every tier that measures
// it, each point with the reading it came from and its age. Several tiers measure the same figure
// at different rates and costs (a worker's RSS of a data file: pagemap present pages at the
// residency rate, smaps at the maps rate, which the CPU budget stretches first); no consumer picks
// a tier: growth, the per-file summaries and the findings read this, and so take the densest exact
// source there is. Sources of each figure: docs/figures.md.
#pragma once

#include "loaderlens/series.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loaderlens {

// Where a point of a figure was read.
enum class Reading {
    statm,       // fast tier: statm / status
    rollup,      // smaps_rollup read at this sample
    rollup_kept, // smaps_rollup reading kept while nothing that moves it moved (age_ms old)
    composite,   // kept reading + the followed data files' share from pagemap at this sample
    pagemap,     // residency tier: present pages of a file in the process's mappings
    smaps,       // maps tier: /proc/PID/smaps summed per backing file
};
const char* to_string(Reading reading);

struct FigurePoint {
    std::int64_t t_ms = 0; // when the row was recorded
    std::int64_t kb = 0;
    Reading source = Reading::statm;
    // 0: read at t_ms; else the value is a reading this many ms old (rollup_kept, composite).
    std::int64_t age_ms = 0;
};
using FigurePoints = std::vector<FigurePoint>; // in time order

// A process's memory of one mapped file.
enum class FileFigure { rss, pss };

class FigureModel {
  public:
    // Keeps a reference to `data`, which must outlive the model.
    explicit FigureModel(const RecordingData& data);

    // A process's per-process figure (fast and rollup tiers' figures): its last (first) point
    // in [from_ms, to_ms] where the figure was read (empty: none). Not materialised: a 1 h x
    // 32-worker recording holds 1.2 M fast rows.
    std::optional<FigurePoint> last_in(std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                       std::int64_t to_ms) const;
    std::optional<FigurePoint> first_in(std::int64_t process_id, Figure figure,
                                        std::int64_t from_ms, std::int64_t to_ms) const;

    // A process's memory of a file, by path: smaps (maps tier) and pagemap (residency tier)
    // merged in time order (empty: never seen mapped).
    const FigurePoints& file_points(std::int64_t process_id, const std::string& path,
                                    FileFigure figure) const;
    // The files a process was seen mapping, in path order.
    std::vector<std::string> files_of(std::int64_t process_id) const;
    // The file's size in bytes as last seen by either tier (empty: unknown).
    std::optional<std::int64_t> file_size_bytes(const std::string& path) const;

    // The last (first) point of `points` in [from_ms, to_ms] (empty: none).
    static std::optional<FigurePoint> last_in(const FigurePoints& points, std::int64_t from_ms,
                                              std::int64_t to_ms);
    static std::optional<FigurePoint> first_in(const FigurePoints& points, std::int64_t from_ms,
                                               std::int64_t to_ms);

    // A file's sums over the tree at one tick of one source: a pagemap run or a maps run covers
    // every process mapping the file at once, so such a sum is complete.
    struct FileTick {
        std::int64_t t_ms = 0;
        Reading source = Reading::smaps;
        std::int64_t rss_kb = 0;
        Kib pss_kb; // empty: no PSS at this tick (pagemap rows of recordings before schema 5)
        std::vector<std::int64_t> process_ids;
    };
    // In time order (empty: the file was never seen mapped). process_ids: those with pages of it
    // present at the tick.
    const std::vector<FileTick>& file_ticks(const std::string& path) const;
    // Every file seen mapped, in path order.
    std::vector<std::string> files() const;
    // The tick with the largest sum of the figure (empty: never seen mapped); Σ PSS from pagemap
    // ticks where the residency tier follows the file (smaps is read process after process).
    std::optional<FileTick> file_total_peak(const std::string& path, FileFigure figure) const;
    // Whether the model stands by this tick's Σ PSS of the file: not a smaps tick where pagemap
    // follows the file (the rule file_total_peak applies, for every consumer of the sums).
    bool pss_counts(const std::string& path, const FileTick& tick) const;

    // Each process's rows of the fast and rollup tables, as indices in time order: one pass over
    // the tables instead of one per slot and figure.
    std::unordered_map<std::int64_t, std::vector<std::size_t>> fast, rollup;

  private:
    template <bool Last>
    std::optional<FigurePoint> pick(std::int64_t process_id, Figure figure, std::int64_t from_ms,
                                    std::int64_t to_ms) const;
    using FileKey = std::tuple<std::int64_t, std::string, FileFigure>;
    const RecordingData& data_;
    std::map<FileKey, FigurePoints> file_points_;
    std::map<std::string, std::vector<FileTick>> file_ticks_;
    std::map<std::string, std::int64_t> file_sizes_;
    std::set<std::string> pss_from_pagemap_; // files with a pagemap tick that has a Σ PSS
};

} // namespace loaderlens
