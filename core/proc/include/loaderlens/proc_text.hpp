// SPDX-License-Identifier: MIT
// Parsers for the text files of /proc. Pure functions over strings so that captured texts can be
// used as test fixtures; the samplers own the reading.
#pragma once

#include "loaderlens/types.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace loaderlens {

// Reads a whole (proc) file, multi-record seq_files included. On failure returns nullopt and sets
// `error` to errno.
std::optional<std::string> read_text_file(const std::string& path, int* error = nullptr);

// Re-reads a kept-open single-record proc file (statm, status, stat, smaps_rollup) from offset 0
// into `buffer` (grown as needed). Returns bytes or -errno. Not for multi-record files (smaps).
long pread_whole(int fd, std::string& buffer);

// Fields of /proc/PID/stat that the tracker needs.
struct StatFields {
    std::string comm;
    char state = '?';
    pid_t ppid = 0;
    std::uint64_t start_ticks = 0;
    int exit_code = 0; // field 52: the wait status of a zombie (Linux >= 3.5)
    // Page faults so far (fields 10 and 12): a copy-on-write break is one, and moves PSS without
    // moving statm's resident or shared count.
    std::uint64_t minor_faults = 0, major_faults = 0;
    // Where the address space's stack, heap, arguments and environment start (fields 28, 47, 48,
    // 50). A child forked without exec has its parent's; an exec starts a new address space, which
    // ASLR places elsewhere. All 0 without ptrace read access to the process.
    std::uint64_t start_stack = 0, start_brk = 0, arg_start = 0, env_start = 0;
};
std::optional<StatFields> parse_stat(std::string_view text);

// /proc/PID/statm: sizes in pages.
struct StatmFields {
    std::int64_t size_pages = 0, resident_pages = 0, shared_pages = 0;
};
std::optional<StatmFields> parse_statm(std::string_view text);

// One "Name:   123 kB" field to find in a text; `value` is left empty when the name is absent.
struct KbField {
    std::string_view name;
    Kib* value;
};
// Fills every field whose name matches a line's key exactly (so "Pss" never matches "Pss_Anon").
// Returns how many fields were found.
int parse_kb_fields(std::string_view text, std::span<const KbField> fields);

// Fills a rollup sample from the text of /proc/PID/smaps_rollup.
void parse_smaps_rollup(std::string_view text, RollupSample& sample);

// Fills RSS, the anon/file/shmem split and swap from /proc/PID/status.
void parse_status_memory(std::string_view text, FastSample& sample);

// Classifies a mapping by its pathname column in /proc/PID/maps or smaps.
MappingKind classify_mapping(std::string_view pathname);

// A pathname as /proc/PID/maps and smaps show it, decoded: the kernel writes a newline in a name
// as \012 and escapes nothing else (seq_file_path with "\n"), so a name that holds the text
// \012 itself reads as a newline too: the kernel writes both alike.
std::string maps_path(std::string_view as_shown);

} // namespace loaderlens
