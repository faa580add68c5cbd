// SPDX-License-Identifier: MIT
// Where a reader of a recording is: what it has read of each table, by rowid. A time cursor would
// skip rows: the deep tiers' rows carry the start time of their run but are committed after newer
// fast rows. Residency rows store a bucket vector only when it changed; the cursor keeps the
// vectors in force, so each read decodes only the new rows.
#pragma once

#include "loaderlens/residency.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace loaderlens {

struct Cursor {
    // Highest rowid read, per table (absent: nothing read yet).
    std::map<std::string, std::int64_t> read_up_to;
    // Highest revision read of processes (schema 4; older files: re-read whole).
    std::int64_t process_revision = -1;
    // SQLite's PRAGMA data_version at the last read: unchanged means nothing new.
    std::optional<std::int64_t> data_version;
    // The residency bucket vectors in force at the cursor, and the files' layouts.
    std::map<std::int64_t, ResidencyFile> residency_files;
    std::map<std::int64_t, BucketCounts> cache_buckets, evicted_buckets;
    std::map<std::pair<std::int64_t, std::int64_t>, BucketCounts> mapped_buckets; // file, process
};

} // namespace loaderlens
