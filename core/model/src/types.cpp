// SPDX-License-Identifier: MIT
#include "loaderlens/types.hpp"

#include <array>
#include <utility>

namespace loaderlens {

namespace {
constexpr std::array<std::pair<Role, const char*>, 3> role_names{
    {{Role::main, "main"}, {Role::worker, "worker"}, {Role::helper, "helper"}}};
constexpr std::array<std::pair<MappingKind, const char*>, 7> kind_names{{
    {MappingKind::file, "file"},
    {MappingKind::deleted_file, "deleted_file"},
    {MappingKind::anon, "anon"},
    {MappingKind::heap, "heap"},
    {MappingKind::stack, "stack"},
    {MappingKind::shmem, "shmem"},
    {MappingKind::other, "other"},
}};

template <typename Enum, std::size_t N>
const char* name_of(const std::array<std::pair<Enum, const char*>, N>& names, Enum value) {
    for (const auto& [e, name] : names)
        if (e == value) return name;
    return "?";
}
template <typename Enum, std::size_t N>
std::optional<Enum> value_of(const std::array<std::pair<Enum, const char*>, N>& names,
                             const std::string& text) {
    for (const auto& [e, name] : names)
        if (text == name) return e;
    return std::nullopt;
}
} // namespace

std::string process_label(const ProcessInfo& p) {
    if (p.role == Role::worker)
        return "worker " + std::to_string(p.slot) + " (gen " + std::to_string(p.generation) + ")";
    return to_string(p.role);
}

const char* to_string(Role role) {
    return name_of(role_names, role);
}
std::optional<Role> role_from_string(const std::string& text) {
    return value_of(role_names, text);
}
const char* to_string(MappingKind kind) {
    return name_of(kind_names, kind);
}
std::optional<MappingKind> mapping_kind_from_string(const std::string& text) {
    return value_of(kind_names, text);
}

Kib RollupSample::uss() const {
    if (!private_clean || !private_dirty) return std::nullopt;
    return saturating_add(*private_clean, *private_dirty);
}

} // namespace loaderlens
