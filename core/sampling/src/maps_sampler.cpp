// SPDX-License-Identifier: MIT
#include "loaderlens/maps_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <fcntl.h>
#include <unistd.h>
#include <unordered_map>

namespace loaderlens {

namespace {

// Splits an smaps header "start-end perms offset dev inode   pathname" into inode and pathname,
// and says whether the perms ("r-xp") allow execution.
bool parse_header(std::string_view line, std::uint64_t& inode, std::string_view& path,
                  bool& executable) {
    std::size_t pos = 0;
    executable = false;
    for (int field = 0; field < 4; ++field) { // skip range, perms, offset, dev
        pos = line.find(' ', pos);
        if (pos == std::string_view::npos) return false;
        pos = line.find_first_not_of(' ', pos);
        if (pos == std::string_view::npos) return false;
        if (field == 0) executable = line.size() > pos + 2 && line[pos + 2] == 'x';
    }
    std::size_t end = line.find(' ', pos);
    std::string_view inode_text = line.substr(pos, end - pos);
    std::from_chars(inode_text.data(), inode_text.data() + inode_text.size(), inode);
    path = {};
    if (end != std::string_view::npos) {
        std::size_t start = line.find_first_not_of(' ', end);
        if (start != std::string_view::npos) path = line.substr(start);
    }
    return true;
}

// The per-mapping smaps fields kept, and where each goes: one table for parsing and summing.
constexpr std::array<std::pair<std::string_view, std::int64_t MappedObject::*>, 8> smaps_fields{{
    {"Size", &MappedObject::size_kb},
    {"Rss", &MappedObject::rss_kb},
    {"Pss", &MappedObject::pss_kb},
    {"Shared_Clean", &MappedObject::shared_clean_kb},
    {"Shared_Dirty", &MappedObject::shared_dirty_kb},
    {"Private_Clean", &MappedObject::private_clean_kb},
    {"Private_Dirty", &MappedObject::private_dirty_kb},
    {"Swap", &MappedObject::swap_kb},
}};

bool is_header(std::string_view line) {
    // Headers start with a lowercase hex address; field lines with a capital ("Rss:", "VmFlags:").
    char c = line.empty() ? 0 : line[0];
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

} // namespace

std::vector<MappedObject> aggregate_smaps(std::string_view text, std::int64_t min_file_rss_kb) {
    std::unordered_map<std::string, MappedObject> objects;
    MappedObject* current = nullptr;
    std::string key;
    while (!text.empty()) {
        std::size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        if (is_header(line)) {
            std::uint64_t inode = 0;
            std::string_view path;
            bool executable = false;
            if (!parse_header(line, inode, path, executable)) {
                current = nullptr;
                continue;
            }
            MappingKind kind = classify_mapping(path);
            bool named = kind == MappingKind::file || kind == MappingKind::deleted_file ||
                         kind == MappingKind::shmem;
            key.assign(to_string(kind));
            // Decoded only where the kernel escaped something (no copy per mapping otherwise).
            std::string decoded;
            if (named && path.find("\\012") != std::string_view::npos) {
                decoded = maps_path(path);
                path = decoded;
            }
            if (named) key.append(":").append(std::to_string(inode)).append(":").append(path);
            auto [it, inserted] = objects.try_emplace(key);
            current = &it->second;
            if (inserted) {
                current->kind = kind;
                if (named) {
                    current->path = std::string(path);
                    current->inode = inode;
                }
            }
            // Any mapping of it with execute permission makes the object code (a program, an
            // interpreter, a library: its text segment), whatever its other mappings are.
            if (named && executable) current->executable = true;
            continue;
        }
        if (!current) continue;
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        std::string_view name = line.substr(0, colon);
        std::int64_t* field = nullptr;
        for (const auto& [field_name, member] : smaps_fields)
            if (name == field_name) field = &((*current).*member);
        if (!field) continue;
        std::string_view value = line.substr(colon + 1);
        value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
        std::int64_t kb = 0;
        std::from_chars(value.data(), value.data() + value.size(), kb);
        *field += kb;
    }

    std::vector<MappedObject> out;
    MappedObject small_files{.kind = MappingKind::other, .path = "(files under threshold)"};
    bool any_small = false;
    for (auto& [k, object] : objects) {
        bool is_file = object.kind == MappingKind::file || object.kind == MappingKind::deleted_file;
        if (is_file && object.rss_kb < min_file_rss_kb) {
            any_small = true;
            for (const auto& [field_name, member] : smaps_fields)
                small_files.*member += object.*member;
            continue;
        }
        out.push_back(std::move(object));
    }
    if (any_small) out.push_back(std::move(small_files));
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.rss_kb > b.rss_kb; });
    return out;
}

void MapsSampler::sample(const std::vector<ProcessInfo>& live, std::vector<MapsSample>& out,
                         Problems& problems) {
    for (const ProcessInfo& info : live) {
        int error = 0;
        auto text = read_text_file("/proc/" + std::to_string(info.key.pid) + "/smaps", &error);
        if (!text) {
            if (error != ENOENT && error != ESRCH)
                problems.push_back({info.id, "maps", unavailable_reason("smaps", error)});
            continue;
        }
        if (text->empty()) continue; // zombie or kernel thread
        out.push_back({info.id, aggregate_smaps(*text, min_file_rss_kb_)});
    }
}

} // namespace loaderlens
