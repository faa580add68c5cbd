// SPDX-License-Identifier: MIT
// Plain value types that cross module borders (samplers -> recorder -> recording -> report/GUI).
// Every memory figure is an optional: an empty value means "unavailable" (permission, field missing
// on this kernel, process gone), which the tool must show as such and never as 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace loaderlens {

using Kib = std::optional<std::int64_t>; // a figure in KiB, or unavailable

// Sums, differences and products of figures read from a recording, clamped to the int64 range: a
// damaged file may hold any value, and signed overflow is undefined behaviour.
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (!__builtin_add_overflow(a, b, &out)) return out;
    return b > 0 ? INT64_MAX : INT64_MIN;
}
inline std::int64_t saturating_sub(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (!__builtin_sub_overflow(a, b, &out)) return out;
    return b < 0 ? INT64_MAX : INT64_MIN;
}
inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (!__builtin_mul_overflow(a, b, &out)) return out;
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

// Stable identity of a process: a PID is reused by the kernel, (pid, start time) is not.
struct ProcessKey {
    pid_t pid = 0;
    std::uint64_t start_ticks = 0; // /proc/PID/stat field 22, clock ticks since boot
    friend bool operator==(const ProcessKey&, const ProcessKey&) = default;
    friend auto operator<=>(const ProcessKey&, const ProcessKey&) = default;
};

enum class Role { main, worker, helper };
const char* to_string(Role role);
std::optional<Role> role_from_string(const std::string& text);

// A process of the tracked tree, as the tracker knows it.
struct ProcessInfo {
    std::int64_t id = 0; // recording-wide id, assigned by the tracker (1, 2, ...)
    ProcessKey key;
    pid_t ppid = 0;
    std::int64_t parent_id = 0; // 0 when the parent is outside the tree
    std::string comm;
    std::string cmdline;
    Role role = Role::helper;
    int slot = -1;       // worker slot (0..), -1 for non-workers
    int generation = -1; // how many workers held this slot before this one, -1 for non-workers
    std::int64_t birth_ms = 0;           // recording clock (ms since recording start)
    std::optional<std::int64_t> exit_ms; // when the tracker saw it gone
    std::optional<int> exit_status;      // wait status when known (our child, or seen as zombie)
    // The input recording it came from, in a merged recording (parts.id, schema 7); 0 otherwise.
    int part = 0;
};

// How reports name a process: "worker 3 (gen 1)", "main", "helper".
std::string process_label(const ProcessInfo& process);

// Fast tier: /proc/PID/statm (RSS, shared) and /proc/PID/status (the split and swap).
struct FastSample {
    std::int64_t process_id = 0;
    Kib rss, rss_anon, rss_file, rss_shmem, swap;
};

// Rollup tier: /proc/PID/smaps_rollup.
struct RollupSample {
    std::int64_t process_id = 0;
    Kib rss, pss, pss_anon, pss_file, pss_shmem;
    Kib shared_clean, shared_dirty, private_clean, private_dirty;
    Kib swap, swap_pss, locked;
    Kib uss() const; // Private_Clean + Private_Dirty
    // 0: read at this sample. Otherwise the figures of a reading this many ms old, kept because
    // nothing that moves them moved since (RollupSampler); never more than its max_age_ms.
    std::int64_t age_ms = 0;
    // Set in a composite row: the part of pss (and of pss_file, and of rss as present pages) that
    // is the followed data files' share computed from pagemap at this sample; the rest of each
    // figure is the kernel reading age_ms old, and the clean/dirty split is then unavailable.
    // Empty in a row read or kept whole (and in recordings before schema 6).
    Kib pss_computed;
};

// What backs a group of mappings.
enum class MappingKind { file, deleted_file, anon, heap, stack, shmem, other };
const char* to_string(MappingKind kind);
std::optional<MappingKind> mapping_kind_from_string(const std::string& text);

// One backing object (a file by path+inode, or a kind of anonymous memory) in one process,
// summed over all its mappings in /proc/PID/smaps.
struct MappedObject {
    MappingKind kind = MappingKind::anon;
    std::string path; // empty for anon/heap/stack
    std::uint64_t inode = 0;
    std::int64_t size_kb = 0; // virtual size of the mappings
    std::int64_t rss_kb = 0, pss_kb = 0;
    std::int64_t shared_clean_kb = 0, shared_dirty_kb = 0;
    std::int64_t private_clean_kb = 0, private_dirty_kb = 0;
    std::int64_t swap_kb = 0;
    // One of its mappings has execute permission ('x' in smaps): a program, interpreter or
    // library, i.e. code, not data.
    bool executable = false;
};

struct MapsSample {
    std::int64_t process_id = 0;
    std::vector<MappedObject> objects;
};

// The memory cgroup of the tree's root: v1 or v2 files (see docs/figures.md).
struct CgroupSample {
    std::string version; // "v1", "v2"
    std::string path;
    Kib usage, peak, limit;
    bool unlimited = false;             // the limit file said "max" (v2) or the v1 "no limit" value
    Kib anon, file, shmem, file_mapped; // from memory.stat
    Kib active_file, inactive_file;
    std::optional<std::int64_t> failcnt;  // v1 memory.failcnt
    std::optional<std::int64_t> oom_kill; // v2 memory.events / v1 memory.oom_control
    int part = 0; // the node's part in a merged recording (schema 7); 0 otherwise
};

// System-wide figures: /proc/meminfo and statvfs(/dev/shm).
struct SystemSample {
    Kib mem_total, mem_available, cached, shmem, dirty;
    Kib devshm_used, devshm_size;
    // Schema 4: the page cache's two LRU lists, pages being written back, reclaimable kernel
    // memory.
    Kib active_file, inactive_file, writeback, kreclaimable;
    int part = 0; // the node's part in a merged recording (schema 7); 0 otherwise
};

struct Marker {
    std::int64_t t_ms = 0;
    std::string source; // "env-file", "loader", "recorder"
    std::string text;
    int part = 0; // the part it was marked in, in a merged recording (schema 7); 0 otherwise
};

// Why a figure is missing for a process in a tier (stored once per change).
struct Unavailability {
    std::int64_t process_id = 0; // 0 = not process-specific (cgroup, system)
    std::string tier;
    std::string reason;
    int part = 0; // in a merged recording (schema 7); 0 otherwise
};

// What a tier cost and which interval it ran at (the adaptive budget's decisions).
struct TierStat {
    std::string tier;
    std::int64_t interval_ms = 0;
    double cpu_us_per_run = 0;
    int processes = 0;
    int part = 0; // in a merged recording (schema 7); 0 otherwise
};

} // namespace loaderlens
