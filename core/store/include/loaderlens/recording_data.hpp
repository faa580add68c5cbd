// SPDX-License-Identifier: MIT
// What a recording holds, as plain rows: all of it (a finished file read once) or what is new
// since a reader's cursor (Recording::read_new). The analysis layer works on this, whichever it is.
#pragma once

#include "loaderlens/loader_run.hpp"
#include "loaderlens/residency.hpp"
#include "loaderlens/types.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loaderlens {

template <typename Sample> struct Timed {
    std::int64_t t_ms;
    Sample sample;
};

struct ObjectInfo {
    std::int64_t id = 0;
    MappingKind kind = MappingKind::file;
    std::string path;
    std::uint64_t inode = 0;
    std::optional<std::int64_t> size_bytes;
    // Some process mapped it with execute permission (schema 8): a program, interpreter or
    // library. Empty in older recordings.
    std::optional<bool> executable;
    // Code, not data: mapped executable; where that is not recorded (schema < 8), or not seen
    // yet by a reader following a recording, a shared object by its name (".so", ".so.N").
    bool is_code() const;
};

// A shared object by its name: ".so" or ".so.N" (the rule before schema 8 recorded execution).
bool named_like_shared_library(const std::string& path);

struct MapRow {
    std::int64_t t_ms = 0, process_id = 0, object_id = 0;
    MappedObject figures; // kind/path/inode left empty: see objects
};

// One input of a merged recording (`loaderlens merge`, schema 7): a node's (or a step's, a
// task's) recording. Its rows carry its id (ProcessInfo::part, ...) and their times are shifted by
// offset_ms onto the job's time axis, which starts at the earliest input's wall-clock start.
struct RecordingPart {
    int id = 0;       // 1, 2, ... in start order
    std::string name; // the host, with .stepS / .taskT (or .N) only where needed to tell apart
    std::string host; // meta host
    std::string job, step, task; // meta slurm_job_id, slurm_step_id, slurm_procid ("" if none)
    std::string source;          // the input file as given to merge
    std::int64_t schema = 0;     // the input's schema
    std::int64_t start_unix_ns = 0;
    std::int64_t offset_ms = 0;              // (start_unix_ns - the earliest input's) / 1e6
    std::int64_t duration_ms = 0;            // its own: end_ms, never earlier than its last sample
    std::int64_t last_sample_ms = -1;        // on its own clock; -1: no sample
    std::string end_state;                   // finished, interrupted, or cut
    std::map<std::string, std::string> meta; // the input's own meta table
};

struct RecordingData {
    // The whole meta table, when it changed (a live reader gets it again at each change).
    std::map<std::string, std::string> meta;
    // A merged recording's inputs (empty for any other recording).
    std::vector<RecordingPart> parts;
    // Processes born or changed (exit, role, slot, rename) since the cursor, by id, in id order.
    std::vector<ProcessInfo> processes;
    std::vector<ObjectInfo> objects;
    // Sample rows in the order they were written: one tier run's rows share a t_ms and are
    // contiguous; each table's runs come in time order.
    std::vector<Timed<FastSample>> fast;
    std::vector<Timed<RollupSample>> rollup;
    std::vector<MapRow> maps;
    std::vector<Timed<CgroupSample>> cgroup;
    std::vector<Timed<SystemSample>> system;
    std::vector<Marker> markers;
    std::vector<Timed<Unavailability>> unavailable;
    std::vector<Timed<TierStat>> tier_stats;
    // Residency: every bucket vector filled in, also where the recording stored "unchanged".
    std::vector<ResidencyFile> residency_files;
    std::vector<Timed<CacheResidency>> cache_residency;
    std::vector<Timed<MappedResidency>> mapped_residency;
    // The reference loader's account so far: epochs and progress new since the cursor, workers
    // new or changed; config, status and message from meta (empty unless `loaderlens replay`).
    LoaderRun loader;

    bool empty() const;
    // Folds a later read into this one: rows appended; processes and loader workers that changed
    // replace the earlier row of the same id; meta and the loader's status taken when present.
    void append(RecordingData&& newer);
};

} // namespace loaderlens
