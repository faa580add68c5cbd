// SPDX-License-Identifier: MIT
#include "residency_store.hpp"

#include "loaderlens/recording.hpp"
#include "recording_read.hpp"

#include <bit>
#include <cstring>
#include <unordered_map>

namespace loaderlens {

static_assert(std::endian::native == std::endian::little,
              "bucket BLOBs are little-endian int32 (docs/recording.md)");

namespace {

// The most buckets a recording may hold per file (record --residency-buckets accepts up to 65536).
constexpr std::int64_t max_buckets = 65536;
// Sizes a recorder can have written: below 2^62 bytes, pages of at most 1 GiB (a huge page).
constexpr std::int64_t max_size_bytes = std::int64_t{1} << 62, max_page_size = 1 << 30;

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

ResidencyWriter::ResidencyWriter(sql::Database& db)
    : file_(db.prepare("INSERT INTO residency_files VALUES(?,?,?,?,?,?,?,?,?,?,?,?)")),
      cache_(db.prepare("INSERT INTO cache_residency VALUES(?,?,?,?,?,?,?,?,?)")),
      mapped_(db.prepare("INSERT INTO mapped_residency VALUES(?,?,?,?,?,?)")) {}

void ResidencyWriter::bind_buckets(sql::Statement& statement, int index,
                                   const BucketCounts& buckets, BucketCounts& last) {
    if (buckets == last && !buckets.empty()) {
        statement.bind_null(index);
        return;
    }
    statement.bind_blob(index, buckets.data(), buckets.size() * sizeof(std::int32_t));
    last = buckets;
}

void ResidencyWriter::write(std::int64_t t_ms, const ResidencySample& sample) {
    for (const ResidencyFile& f : sample.new_files) {
        file_.bind(1, f.id).bind(2, f.path);
        file_.bind(3, static_cast<std::int64_t>(f.device))
            .bind(4, static_cast<std::int64_t>(f.inode));
        file_.bind(5, f.size_bytes).bind(6, f.page_size);
        file_.bind(7, std::int64_t{f.layout.count}).bind(8, f.layout.bucket_pages);
        file_.bind(9, std::string(to_string(f.method)));
        if (f.unavailable_reason.empty())
            file_.bind_null(10);
        else
            file_.bind(10, f.unavailable_reason);
        file_.bind(11, std::int64_t{f.requested}).bind(12, t_ms).run();
    }
    for (const CacheResidency& c : sample.cache) {
        auto& [last_cached, last_evicted] = last_cache_[c.file_id];
        cache_.bind(1, t_ms).bind(2, c.file_id).bind(3, c.totals.cached);
        cache_.bind(4, Kib(c.totals.dirty)).bind(5, Kib(c.totals.writeback));
        cache_.bind(6, Kib(c.totals.evicted)).bind(7, Kib(c.totals.recently_evicted));
        bind_buckets(cache_, 8, c.buckets, last_cached);
        if (c.evicted_buckets.empty())
            cache_.bind_null(9);
        else
            bind_buckets(cache_, 9, c.evicted_buckets, last_evicted);
        cache_.run();
    }
    for (const MappedResidency& m : sample.mapped) {
        mapped_.bind(1, t_ms).bind(2, m.file_id).bind(3, m.process_id);
        mapped_.bind(4, m.mapped_pages).bind(5, m.present_pages);
        bind_buckets(mapped_, 6, m.buckets, last_mapped_[{m.file_id, m.process_id}]);
        mapped_.run();
    }
}

std::vector<ResidencyFile> Recording::residency_files() const {
    return read_recording(path_, [&] {
        std::vector<ResidencyFile> out;
        if (!db_->has_table("residency_files")) return out; // schema 2 or older
        auto q = db_->prepare("SELECT id, path, device, inode, size_bytes, page_size, buckets, "
                              "bucket_pages, method, unavailable_reason, requested, first_ms "
                              "FROM residency_files ORDER BY id");
        while (q.step()) {
            ResidencyFile f;
            f.id = q.int64(0);
            f.path = checked_path(q.text(1), "residency_files", f.id);
            f.device = static_cast<std::uint64_t>(q.int64(2));
            f.inode = static_cast<std::uint64_t>(q.int64(3));
            f.size_bytes = q.int64(4);
            f.page_size = q.int64(5);
            const std::int64_t count = q.int64(6);
            if (count < 0 || count > max_buckets)
                throw sql::Error("residency_files row " + std::to_string(f.id) + " holds buckets " +
                                     std::to_string(count) + ", which no recorder writes",
                                 sql::error_mismatch);
            f.layout.count = static_cast<int>(count);
            f.layout.bucket_pages = q.int64(7);
            if (f.size_bytes >= 0 && f.size_bytes <= max_size_bytes && f.page_size > 0)
                f.layout.file_pages = (f.size_bytes + f.page_size - 1) / f.page_size;
            check_layout(f);
            const std::string method = q.text(8);
            f.method = method == "cachestat" ? CacheMethod::cachestat
                       : method == "mincore" ? CacheMethod::mincore
                                             : CacheMethod::unavailable;
            f.unavailable_reason = q.text(9);
            f.requested = q.int64(10) != 0;
            f.first_ms = q.int64(11);
            out.push_back(std::move(f));
        }
        return out;
    });
}

namespace {
// The files of a recording by id; a residency row of a file that has none is damage.
class FileIndex {
  public:
    explicit FileIndex(std::vector<ResidencyFile> files) {
        for (auto& f : files)
            files_.emplace(f.id, std::move(f));
    }
    const ResidencyFile& at(std::int64_t id, const char* table) const {
        auto it = files_.find(id);
        if (it == files_.end())
            throw sql::Error(std::string(table) + " has rows of file " + std::to_string(id) +
                                 ", which residency_files does not hold",
                             sql::error_mismatch);
        return it->second;
    }

  private:
    std::unordered_map<std::int64_t, ResidencyFile> files_;
};
} // namespace

std::vector<Timed<CacheResidency>> Recording::cache_residency(std::int64_t since_ms) const {
    const FileIndex files(residency_files());
    return read_recording(path_, [&] {
        std::vector<Timed<CacheResidency>> out;
        if (!db_->has_table("cache_residency")) return out;
        // The vectors in force at since_ms: the last stored one of each file up to then.
        std::map<std::int64_t, std::pair<BucketCounts, BucketCounts>> last;
        auto q = db_->prepare("SELECT t_ms, file_id, cached, dirty, writeback, evicted, "
                              "recently_evicted, buckets, evicted_buckets FROM cache_residency "
                              "ORDER BY t_ms, file_id");
        while (q.step()) {
            const std::int64_t t = q.int64(0);
            CacheResidency c;
            c.file_id = q.int64(1);
            const ResidencyFile& file = files.at(c.file_id, "cache_residency");
            auto& [cached, evicted] = last[c.file_id];
            if (!q.is_null(7)) cached = decode(q.blob(7), file, "cache_residency", "buckets");
            if (!q.is_null(8))
                evicted = decode(q.blob(8), file, "cache_residency", "evicted_buckets");
            if (t <= since_ms) continue;
            c.totals = {q.int64(2), q.optional_int64(3), q.optional_int64(4), q.optional_int64(5),
                        q.optional_int64(6)};
            c.buckets = cached;
            if (c.totals.evicted) c.evicted_buckets = evicted;
            out.push_back({t, std::move(c)});
        }
        return out;
    });
}

std::vector<Timed<MappedResidency>> Recording::mapped_residency(std::int64_t since_ms) const {
    const FileIndex files(residency_files());
    return read_recording(path_, [&] {
        std::vector<Timed<MappedResidency>> out;
        if (!db_->has_table("mapped_residency")) return out;
        std::map<std::pair<std::int64_t, std::int64_t>, BucketCounts> last;
        auto q = db_->prepare("SELECT t_ms, file_id, process_id, mapped_pages, present_pages, "
                              "buckets FROM mapped_residency ORDER BY t_ms, file_id, process_id");
        while (q.step()) {
            const std::int64_t t = q.int64(0);
            MappedResidency m{.file_id = q.int64(1), .process_id = q.int64(2)};
            const ResidencyFile& file = files.at(m.file_id, "mapped_residency");
            BucketCounts& buckets = last[{m.file_id, m.process_id}];
            if (!q.is_null(5)) buckets = decode(q.blob(5), file, "mapped_residency", "buckets");
            if (t <= since_ms) continue;
            m.mapped_pages = q.int64(3);
            m.present_pages = q.int64(4);
            m.buckets = buckets;
            out.push_back({t, std::move(m)});
        }
        return out;
    });
}

} // namespace loaderlens
