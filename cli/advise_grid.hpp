// SPDX-License-Identifier: MIT
// The settings `loaderlens advise` replays: lists of values per loader flag (the axes), walked in
// two rounds so that a short time budget is spent on what matters most. Round one crosses the
// primary axes (workers and read mode: what decides the memory a scheduler counts); round two
// varies each other axis, one at a time, around the best setting of round one (docs/advise.md).
#pragma once

#include "loader_options.hpp"
#include "loaderlens/advice.hpp"

#include <optional>
#include <string>
#include <vector>

namespace loaderlens::cli {

struct GridAxis {
    std::string flag;                // as in AdviseSetting: "workers", "read", "persistent"...
    std::vector<std::string> values; // the first is the value round one holds it at
    bool primary = false;
};

// The axes as given (comma-separated lists), or nothing after a one-line error naming the flag.
// Each value is checked the way `replay` checks it.
struct GridFlags {
    std::string workers = "1,2,4,8";
    std::string read;       // default by dataset kind: mmap-view,pread (npy, raw); none else
    std::string persistent; // default: no,yes with two epochs or more
    std::string pin = "no";
    std::string advice = "normal";
    std::string readahead;   // LMDB: on,off
    std::string chunk_cache; // HDF5: chunk cache sizes (default: HDF5's, 1 MiB)
    std::string hdf5_open = "worker";
    std::string batch = "32";
    std::string prefetch = "2";
};
std::optional<std::vector<GridAxis>> grid_axes(const GridFlags& flags,
                                               const std::string& dataset_kind, int epochs);

// Round one: the primary axes crossed, the others at their first value.
std::vector<AdviseSetting> first_round(const std::vector<GridAxis>& axes);
// Round two: `around` with one secondary axis at each of its other values.
std::vector<AdviseSetting> second_round(const std::vector<GridAxis>& axes,
                                        const AdviseSetting& around);
// Every combination (--full-grid).
std::vector<AdviseSetting> full_grid(const std::vector<GridAxis>& axes);

// More settings than this are refused before any is built or run (docs/advise.md): a 5-minute
// budget runs about 100, and every planned one is a row of the table, run or not.
inline constexpr std::size_t max_settings = 1000;
// The settings `advise` plans: every combination (full), or round one and at most the others'
// values around its best; saturates at SIZE_MAX. With a one-line error when over max_settings.
std::size_t planned_settings(const std::vector<GridAxis>& axes, bool full);
std::optional<std::string> too_many_settings(const std::vector<GridAxis>& axes, bool full);

// Whether the loader can run `flags` at all, the way `replay` checks them: a one-line error
// naming the flag and nothing else when not. So that a grid with a value no setting can run
// with (--workers beyond what may be forked, --readahead on a .npy) is refused before any run.
bool runnable(const LoaderFlags& flags);
// Every setting that can run (round two around any setting of round one): false after the error
// of the first that cannot.
bool every_setting_runnable(const LoaderFlags& base, const std::vector<GridAxis>& axes, bool full);

// A setting's flags written into the loader's flags (`base` holds the shared ones).
LoaderFlags with_setting(LoaderFlags base, const AdviseSetting& setting);

} // namespace loaderlens::cli
