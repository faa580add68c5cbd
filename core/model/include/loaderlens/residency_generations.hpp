// SPDX-License-Identifier: MIT
// Generations of a followed file. The residency tier reads a file that changed size while it was
// followed (written by the job: an LMDB built inside the recording) at its new size from then on:
// the recording holds one residency_files row per size, each with its own id and bucket layout
// (same part, path, device and inode), and every cache/mapped row after the change names the new
// id; the old id's series simply ends (no row of zeros at the change). A requested file that could
// not be opened when the recording began (inode 0) and was created later has a generation of its
// own with its real identity. A file replaced at its path (another inode or device) is another
// file, not a generation. docs/residency.md.
//
// Readers show a file once, at its latest generation's size, and read a (file, process) series
// across generations: at any time its value is the newest row of any of its generations.
#pragma once

#include "loaderlens/residency.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace loaderlens {

// For every file id of `files`: the id of the latest generation of its file (itself when no
// generation came after it). Latest: the greatest (first_ms, id).
inline std::map<std::int64_t, std::int64_t>
latest_generations(const std::vector<ResidencyFile>& files) {
    using Identity = std::tuple<int, std::uint64_t, std::uint64_t, std::string>;
    auto later = [](const ResidencyFile& a, const ResidencyFile& b) {
        return std::tie(a.first_ms, a.id) > std::tie(b.first_ms, b.id);
    };
    std::map<Identity, const ResidencyFile*> latest;
    for (const ResidencyFile& f : files) {
        if (!f.identified()) continue;
        const ResidencyFile*& slot = latest[{f.part, f.device, f.inode, f.path}];
        if (!slot || later(f, *slot)) slot = &f;
    }
    std::map<std::int64_t, std::int64_t> out;
    for (const ResidencyFile& f : files) {
        out[f.id] = f.id;
        if (f.identified()) {
            out[f.id] = latest[{f.part, f.device, f.inode, f.path}]->id;
            continue;
        }
        // Requested but not there at first: the file created at that path later, if any.
        const ResidencyFile* found = nullptr;
        for (const auto& [identity, g] : latest)
            if (g->part == f.part && g->path == f.path &&
                std::tie(g->first_ms, g->id) > std::tie(f.first_ms, f.id) &&
                (!found || later(*g, *found)))
                found = g;
        if (found) out[f.id] = found->id;
    }
    return out;
}

// The files to show: each file once, as its latest generation, with first_ms its first
// generation's (when the residency tier first saw it).
inline std::vector<ResidencyFile> latest_files(const std::vector<ResidencyFile>& files) {
    const std::map<std::int64_t, std::int64_t> latest = latest_generations(files);
    std::map<std::int64_t, std::int64_t> first_ms;
    for (const ResidencyFile& f : files) {
        const std::int64_t id = latest.at(f.id);
        auto [it, inserted] = first_ms.try_emplace(id, f.first_ms);
        if (!inserted) it->second = std::min(it->second, f.first_ms);
    }
    std::vector<ResidencyFile> out;
    for (const ResidencyFile& f : files) {
        if (latest.at(f.id) != f.id) continue;
        out.push_back(f);
        out.back().first_ms = first_ms.at(f.id);
    }
    return out;
}

} // namespace loaderlens
