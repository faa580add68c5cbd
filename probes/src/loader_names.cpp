// SPDX-License-Identifier: MIT
// The names of the loader's knobs, as the command line spells them.
#include "loaderlens/probes/loader.hpp"

#include <array>
#include <utility>

namespace loaderlens::probes {

namespace {
template <typename Enum, std::size_t N>
std::optional<Enum> find_by_name(const std::array<std::pair<Enum, const char*>, N>& names,
                                 std::string_view name) {
    for (const auto& [value, text] : names)
        if (name == text) return value;
    return std::nullopt;
}
template <typename Enum, std::size_t N>
const char* name_of(const std::array<std::pair<Enum, const char*>, N>& names, Enum value) {
    for (const auto& [candidate, text] : names)
        if (candidate == value) return text;
    return "?";
}

constexpr std::array<std::pair<ReadMode, const char*>, 3> read_modes{{
    {ReadMode::mmap_view, "mmap-view"},
    {ReadMode::mmap_copy, "mmap-copy"},
    {ReadMode::pread, "pread"},
}};
constexpr std::array<std::pair<Advice, const char*>, 5> advices{{
    {Advice::normal, "normal"},
    {Advice::random, "random"},
    {Advice::sequential, "sequential"},
    {Advice::willneed, "willneed"},
    {Advice::dontneed_after_use, "dontneed-after-use"},
}};
constexpr std::array<std::pair<LmdbOpen, const char*>, 2> lmdb_opens{{
    {LmdbOpen::parent, "parent"},
    {LmdbOpen::worker, "worker"},
}};
constexpr std::array<std::pair<Hdf5Open, const char*>, 2> hdf5_opens{{
    {Hdf5Open::parent, "parent"},
    {Hdf5Open::worker, "worker"},
}};
} // namespace

std::optional<ReadMode> parse_read_mode(std::string_view name) {
    return find_by_name(read_modes, name);
}
std::optional<Advice> parse_advice(std::string_view name) {
    return find_by_name(advices, name);
}
std::optional<LmdbOpen> parse_lmdb_open(std::string_view name) {
    return find_by_name(lmdb_opens, name);
}
const char* to_string(ReadMode mode) {
    return name_of(read_modes, mode);
}
const char* to_string(Advice advice) {
    return name_of(advices, advice);
}
const char* to_string(LmdbOpen open) {
    return name_of(lmdb_opens, open);
}
std::optional<Hdf5Open> parse_hdf5_open(std::string_view name) {
    return find_by_name(hdf5_opens, name);
}
const char* to_string(Hdf5Open open) {
    return name_of(hdf5_opens, open);
}

} // namespace loaderlens::probes
