// SPDX-License-Identifier: MIT
#include "advise_grid.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <sys/resource.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        out.push_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

bool whole_number_in(const std::string& text, std::int64_t low, std::int64_t high) {
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    return error == std::errc() && end == text.data() + text.size() && value >= low &&
           value <= high;
}

bool one_of(const std::string& text, std::initializer_list<const char*> names) {
    for (const char* name : names)
        if (text == name) return true;
    return false;
}

} // namespace

std::optional<std::vector<GridAxis>> grid_axes(const GridFlags& f, const std::string& kind,
                                               int epochs) {
    const bool lmdb = kind == "lmdb";
    const bool hdf5 = kind == "hdf5";
    const bool file = kind == "npy" || kind == "raw";
    struct Spec {
        const char* flag;
        std::string values;
        bool primary;
        std::function<bool(const std::string&)> valid;
        const char* expected;
    };
    const Spec specs[] = {
        {"workers", f.workers, true,
         [](const std::string& v) { return whole_number_in(v, 0, max_in_flight); },
         "worker counts like 1,2,4,8"},
        {"read", f.read.empty() ? (file ? "mmap-view,pread" : "") : f.read, true,
         [](const std::string& v) { return probes::parse_read_mode(v).has_value(); },
         "read modes: mmap-view, mmap-copy, pread"},
        {"persistent", f.persistent.empty() ? (epochs >= 2 ? "no,yes" : "no") : f.persistent, false,
         [](const std::string& v) {
             return one_of(v, {"no", "yes"});
         },
         "no, yes"},
        {"pin", f.pin, false,
         [](const std::string& v) {
             return one_of(v, {"no", "yes"});
         },
         "no, yes"},
        {"advice", hdf5 ? "" : f.advice, false,
         [](const std::string& v) { return probes::parse_advice(v).has_value(); },
         "normal, random, sequential, willneed, dontneed-after-use"},
        {"readahead", f.readahead.empty() ? (lmdb ? "on,off" : "") : f.readahead, false,
         [](const std::string& v) {
             return one_of(v, {"on", "off"});
         },
         "on, off"},
        {"chunk-cache", hdf5 ? f.chunk_cache : "", false,
         [](const std::string& v) { return parse_size_or_zero(v).has_value(); },
         "sizes like 0, 1MiB, 64MiB"},
        {"hdf5-open", hdf5 ? f.hdf5_open : "", false,
         [](const std::string& v) {
             return one_of(v, {"parent", "worker"});
         },
         "parent, worker"},
        {"batch", f.batch, false,
         [](const std::string& v) { return whole_number_in(v, 1, max_batch); },
         "batch sizes like 32,64"},
        {"prefetch", f.prefetch, false,
         [](const std::string& v) { return whole_number_in(v, 1, max_in_flight); },
         "prefetch factors like 2,4"},
    };
    std::vector<GridAxis> axes;
    for (const Spec& spec : specs) {
        if (spec.values.empty()) continue; // does not apply to this dataset
        GridAxis axis{spec.flag, {}, spec.primary};
        for (const std::string& value : split_list(spec.values)) {
            if (!spec.valid(value)) {
                print_error("--" + std::string(spec.flag) + " " + spec.values + ": \"" + value +
                            "\" is not one of the " + spec.expected);
                return std::nullopt;
            }
            if (std::find(axis.values.begin(), axis.values.end(), value) == axis.values.end())
                axis.values.push_back(value);
        }
        axes.push_back(std::move(axis));
    }
    return axes;
}

namespace {

// Every combination of the axes' values; an axis `whole` does not take holds its first value.
std::vector<AdviseSetting> crossed(const std::vector<GridAxis>& axes,
                                   bool (*whole)(const GridAxis&)) {
    std::vector<AdviseSetting> out{AdviseSetting{}};
    for (const GridAxis& axis : axes) {
        const std::size_t values = whole(axis) ? axis.values.size() : 1;
        std::vector<AdviseSetting> next;
        for (const AdviseSetting& s : out)
            for (std::size_t i = 0; i < values; ++i) {
                AdviseSetting more = s;
                more.flags.emplace_back(axis.flag, axis.values[i]);
                next.push_back(std::move(more));
            }
        out = std::move(next);
    }
    return out;
}

} // namespace

std::vector<AdviseSetting> first_round(const std::vector<GridAxis>& axes) {
    return crossed(axes, [](const GridAxis& axis) { return axis.primary; });
}

std::vector<AdviseSetting> second_round(const std::vector<GridAxis>& axes,
                                        const AdviseSetting& around) {
    std::vector<AdviseSetting> out;
    for (const GridAxis& axis : axes) {
        if (axis.primary) continue;
        for (std::size_t i = 1; i < axis.values.size(); ++i) {
            AdviseSetting changed = around;
            for (auto& [flag, value] : changed.flags)
                if (flag == axis.flag) value = axis.values[i];
            out.push_back(std::move(changed));
        }
    }
    return out;
}

std::vector<AdviseSetting> full_grid(const std::vector<GridAxis>& axes) {
    return crossed(axes, [](const GridAxis&) { return true; });
}

std::size_t planned_settings(const std::vector<GridAxis>& axes, bool full) {
    std::size_t crossed = 1, others = 0;
    for (const GridAxis& axis : axes) {
        if (!full && !axis.primary) {
            others += axis.values.size() - 1;
            continue;
        }
        if (crossed > SIZE_MAX / axis.values.size()) return SIZE_MAX;
        crossed *= axis.values.size();
    }
    return crossed > SIZE_MAX - others ? SIZE_MAX : crossed + others;
}

std::optional<std::string> too_many_settings(const std::vector<GridAxis>& axes, bool full) {
    const std::size_t planned = planned_settings(axes, full);
    if (planned <= max_settings) return std::nullopt;
    std::string product;
    for (const GridAxis& axis : axes)
        if (axis.values.size() > 1)
            product += (product.empty() ? ""
                        : full          ? " x "
                                        : ", ") +
                       ("--" + axis.flag) + " (" + std::to_string(axis.values.size()) + ")";
    return std::string(full ? "--full-grid: " : "") + product + ": " +
           (planned == SIZE_MAX ? std::string("too many") : std::to_string(planned)) +
           " settings, more than " + std::to_string(max_settings) +
           (full ? " (give fewer values, or leave out --full-grid for two rounds)"
                 : " (give fewer values)");
}

bool runnable(const LoaderFlags& flags) {
    probes::DatasetLayout layout;
    if (!checked_loader_options(flags, layout)) return false;
    // The loader forks its workers and main: beyond the user's process limit the forks fail
    // mid-run (root is not held to it).
    rlimit processes{};
    if (::geteuid() != 0 && ::getrlimit(RLIMIT_NPROC, &processes) == 0 &&
        processes.rlim_cur != RLIM_INFINITY &&
        static_cast<rlim_t>(flags.workers) + 2 > processes.rlim_cur) {
        print_error("--workers " + std::to_string(flags.workers) + ": more than the " +
                    std::to_string(processes.rlim_cur) +
                    " processes this user may run (ulimit -u) less main and the recorder");
        return false;
    }
    return true;
}

bool every_setting_runnable(const LoaderFlags& base, const std::vector<GridAxis>& axes, bool full) {
    const std::vector<AdviseSetting> first = full ? full_grid(axes) : first_round(axes);
    for (const AdviseSetting& setting : first) {
        if (!runnable(with_setting(base, setting))) return false;
        if (full) continue;
        for (const AdviseSetting& around : second_round(axes, setting))
            if (!runnable(with_setting(base, around))) return false;
    }
    return true;
}

LoaderFlags with_setting(LoaderFlags f, const AdviseSetting& setting) {
    for (const auto& [flag, value] : setting.flags) {
        if (flag == "workers") f.workers = std::stoi(value);
        if (flag == "read") f.read = value;
        if (flag == "persistent") f.persistent = value == "yes";
        if (flag == "pin") f.pin = value == "yes";
        if (flag == "advice") f.advice = value;
        if (flag == "readahead") f.readahead = value;
        if (flag == "batch") f.batch = std::stoll(value);
        if (flag == "prefetch") f.prefetch = std::stoi(value);
        if (flag == "chunk-cache") f.chunk_cache = value;
        if (flag == "hdf5-open") f.hdf5_open = value;
    }
    return f;
}

} // namespace loaderlens::cli
