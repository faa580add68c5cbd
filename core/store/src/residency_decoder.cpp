// SPDX-License-Identifier: MIT
#include "residency_decoder.hpp"

#include "recording_read.hpp"
#include "table_reader.hpp"

#include <bit>
#include <cstdint>
#include <cstring>

namespace loaderlens {

static_assert(std::endian::native == std::endian::little,
              "bucket BLOBs are little-endian int32 (docs/recording.md)");

namespace {

// The most buckets a recording may hold per file (record --residency-buckets accepts up to 65536).
constexpr std::int64_t max_buckets = 65536;
// Sizes a recorder can have written: below 2^62 bytes, pages of at most 1 GiB (a huge page).
constexpr std::int64_t max_size_bytes = std::int64_t{1} << 62, max_page_size = 1 << 30;

// A count (of processes, of buckets): NULL, or 0 .. 2^31-1 (more is damage, not a count a
// recorder wrote).
std::optional<std::int32_t> narrow(const Kib& stored, const char* table = "mapped_residency",
                                   const char* what = "process count") {
    if (!stored) return std::nullopt;
    if (*stored < 0 || *stored > INT32_MAX)
        throw sql::Error(std::string(table) + ": a " + what + " of " + std::to_string(*stored),
                         sql::error_mismatch);
    return static_cast<std::int32_t>(*stored);
}

// A stored bucket vector; its length must be the file's bucket count (a BLOB of another length
// is damage, and reading past the shorter of two vectors was a heap over-read).
BucketCounts decode(std::string_view blob, const ResidencyFile& file, const char* table,
                    const char* column) {
    if (blob.size() != static_cast<std::size_t>(file.layout.count) * sizeof(std::int32_t))
        throw sql::Error(std::string(table) + "." + column + " of file " + std::to_string(file.id) +
                             " holds " + std::to_string(blob.size()) + " bytes where its " +
                             std::to_string(file.layout.count) + " buckets take " +
                             std::to_string(file.layout.count * 4),
                         sql::error_mismatch);
    BucketCounts out(static_cast<std::size_t>(file.layout.count));
    if (!out.empty()) std::memcpy(out.data(), blob.data(), blob.size());
    return out;
}

// Throws unless the file's layout is one a recorder can have written: the bucket BLOBs are
// checked against it, and its figures are multiplied by one another in the report.
void check_layout(const ResidencyFile& f) {
    const BucketLayout& l = f.layout;
    std::string problem;
    if (f.size_bytes < 0 || f.size_bytes > max_size_bytes)
        problem = "size_bytes " + std::to_string(f.size_bytes);
    else if (f.page_size < 1 || f.page_size > max_page_size)
        problem = "page_size " + std::to_string(f.page_size);
    else if (l.bucket_pages < 1 || l.bucket_pages > std::max<std::int64_t>(l.file_pages, 1) ||
             (l.file_pages + l.bucket_pages - 1) / l.bucket_pages != l.count)
        problem = "buckets " + std::to_string(l.count) + " of " + std::to_string(l.bucket_pages) +
                  " pages for " + std::to_string(l.file_pages) + " pages";
    if (!problem.empty())
        throw sql::Error("residency_files row " + std::to_string(f.id) + " holds " + problem +
                             ", which no recorder writes",
                         sql::error_mismatch);
}

} // namespace

void ResidencyDecoder::read(Cursor& cursor, RecordingData& out) {
    if (schema_ < 3) return; // before residency
    files(cursor, out);
    cache(cursor, out);
    mapped(cursor, out);
}

void ResidencyDecoder::files(Cursor& cursor, RecordingData& out) {
    tables_.past(cursor, "residency_files", [&](sql::Statement& q) {
        ResidencyFile f;
        f.id = q.int64(1);
        f.path = checked_path(q.text(2), "residency_files", f.id);
        f.device = static_cast<std::uint64_t>(q.int64(3));
        f.inode = static_cast<std::uint64_t>(q.int64(4));
        f.size_bytes = q.int64(5);
        f.page_size = q.int64(6);
        const std::int64_t count = q.int64(7);
        if (count < 0 || count > max_buckets)
            throw sql::Error("residency_files row " + std::to_string(f.id) + " holds buckets " +
                                 std::to_string(count) + ", which no recorder writes",
                             sql::error_mismatch);
        f.layout.count = static_cast<int>(count);
        f.layout.bucket_pages = q.int64(8);
        if (f.size_bytes >= 0 && f.size_bytes <= max_size_bytes && f.page_size > 0)
            f.layout.file_pages = (f.size_bytes + f.page_size - 1) / f.page_size;
        check_layout(f);
        const std::string method = q.text(9);
        f.method = method == "cachestat" ? CacheMethod::cachestat
                   : method == "mincore" ? CacheMethod::mincore
                                         : CacheMethod::unavailable;
        f.unavailable_reason = q.text(10);
        f.requested = q.int64(11) != 0;
        f.first_ms = q.int64(12);
        const Kib part = q.optional_int64(13); // schema 7, merged recordings only
        if (part && (*part < 0 || *part > INT32_MAX))
            throw sql::Error("residency_files row " + std::to_string(f.id) + " holds part " +
                                 std::to_string(*part),
                             sql::error_mismatch);
        f.part = static_cast<int>(part.value_or(0));
        cursor.residency_files[f.id] = f;
        out.residency_files.push_back(std::move(f));
    });
}

namespace {
// A residency row of a file that residency_files does not hold is damage.
const ResidencyFile& file_of(const Cursor& cursor, std::int64_t id, const char* table) {
    auto it = cursor.residency_files.find(id);
    if (it == cursor.residency_files.end())
        throw sql::Error(std::string(table) + " has rows of file " + std::to_string(id) +
                             ", which residency_files does not hold",
                         sql::error_mismatch);
    return it->second;
}
} // namespace

BucketCounts ResidencyDecoder::stored_before(const char* table, const char* column,
                                             const char* series, std::int64_t rowid,
                                             const ResidencyFile& file, std::int64_t process_id) {
    // Newest first from `rowid` down: a keyframe every few rows of each series bounds the walk.
    auto q =
        db_.prepare(std::string("SELECT ") + column + " FROM " + table + " WHERE rowid < ? AND " +
                    series + " AND " + column + " IS NOT NULL ORDER BY rowid DESC LIMIT 1");
    q.bind(1, rowid).bind(2, file.id);
    if (process_id >= 0) q.bind(3, process_id);
    if (!q.step()) return {};
    return decode(q.blob(0), file, table, column);
}

void ResidencyDecoder::cache(Cursor& cursor, RecordingData& out) {
    tables_.past(cursor, "cache_residency", [&](sql::Statement& q) {
        const std::int64_t rowid = q.int64(0), t = q.int64(1);
        CacheResidency c;
        c.file_id = q.int64(2);
        const ResidencyFile& file = file_of(cursor, c.file_id, "cache_residency");
        c.totals = {q.int64(3), q.optional_int64(4), q.optional_int64(5), q.optional_int64(6),
                    q.optional_int64(7)};
        auto [cached, new_series] = cursor.cache_buckets.try_emplace(c.file_id);
        if (!q.is_null(8))
            cached->second = decode(q.blob(8), file, "cache_residency", "buckets");
        else if (new_series)
            cached->second =
                stored_before("cache_residency", "buckets", "file_id = ?", rowid, file);
        c.buckets = cached->second;
        if (c.totals.evicted) {
            auto [evicted, new_evicted] = cursor.evicted_buckets.try_emplace(c.file_id);
            if (!q.is_null(9))
                evicted->second = decode(q.blob(9), file, "cache_residency", "evicted_buckets");
            else if (new_evicted)
                evicted->second =
                    stored_before("cache_residency", "evicted_buckets", "file_id = ?", rowid, file);
            c.evicted_buckets = evicted->second;
        }
        c.read_buckets = narrow(q.optional_int64(10), "cache_residency", "read buckets");
        c.carried_age_ms = q.optional_int64(11); // schema 9
        if (c.carried_age_ms && *c.carried_age_ms < 0)
            throw sql::Error("cache_residency: a carried age of " +
                                 std::to_string(*c.carried_age_ms) + " ms",
                             sql::error_mismatch);
        out.cache_residency.push_back({t, std::move(c)});
    });
}

void ResidencyDecoder::mapped(Cursor& cursor, RecordingData& out) {
    const std::int64_t last = tables_.last_rowid("mapped_residency");
    if (last > cursor.read_up_to["mapped_residency"] && !tables_.filtering())
        out.mapped_residency.reserve(
            out.mapped_residency.size() +
            static_cast<std::size_t>(last - cursor.read_up_to["mapped_residency"]));
    tables_.past(cursor, "mapped_residency", [&](sql::Statement& q) {
        const std::int64_t rowid = q.int64(0), t = q.int64(1);
        MappedResidency m{.file_id = q.int64(2), .process_id = q.int64(3)};
        const ResidencyFile& file = file_of(cursor, m.file_id, "mapped_residency");
        m.mapped_pages = q.int64(4);
        m.present_pages = q.int64(5);
        auto [buckets, new_series] = cursor.mapped_buckets.try_emplace({m.file_id, m.process_id});
        if (!q.is_null(6))
            buckets->second = decode(q.blob(6), file, "mapped_residency", "buckets");
        else if (new_series)
            buckets->second =
                stored_before("mapped_residency", "buckets", "file_id = ? AND process_id = ?",
                              rowid, file, m.process_id);
        m.buckets = buckets->second;
        m.pss_kb = q.optional_int64(7);
        m.outside_sharers = narrow(q.optional_int64(8));
        m.outside_unreadable = narrow(q.optional_int64(9));
        out.mapped_residency.push_back({t, std::move(m)});
    });
}

} // namespace loaderlens
