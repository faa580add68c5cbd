// SPDX-License-Identifier: MIT
#include "residency_store.hpp"

#include "loaderlens/recording.hpp"

#include <bit>
#include <cstring>

namespace loaderlens {

static_assert(std::endian::native == std::endian::little,
              "bucket BLOBs are little-endian int32 (docs/recording.md)");

namespace {

BucketCounts decode(std::string_view blob) {
    BucketCounts out(blob.size() / sizeof(std::int32_t));
    std::memcpy(out.data(), blob.data(), out.size() * sizeof(std::int32_t));
    return out;
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
    std::vector<ResidencyFile> out;
    if (!db_->has_table("residency_files")) return out; // schema 2 or older
    auto q = db_->prepare("SELECT id, path, device, inode, size_bytes, page_size, buckets, "
                          "bucket_pages, method, unavailable_reason, requested, first_ms "
                          "FROM residency_files ORDER BY id");
    while (q.step()) {
        ResidencyFile f;
        f.id = q.int64(0);
        f.path = q.text(1);
        f.device = static_cast<std::uint64_t>(q.int64(2));
        f.inode = static_cast<std::uint64_t>(q.int64(3));
        f.size_bytes = q.int64(4);
        f.page_size = q.int64(5);
        f.layout.count = static_cast<int>(q.int64(6));
        f.layout.bucket_pages = q.int64(7);
        f.layout.file_pages =
            (f.size_bytes + f.page_size - 1) / std::max<std::int64_t>(f.page_size, 1);
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
}

std::vector<Timed<CacheResidency>> Recording::cache_residency(std::int64_t since_ms) const {
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
        auto& [cached, evicted] = last[c.file_id];
        if (!q.is_null(7)) cached = decode(q.blob(7));
        if (!q.is_null(8)) evicted = decode(q.blob(8));
        if (t <= since_ms) continue;
        c.totals = {q.int64(2), q.optional_int64(3), q.optional_int64(4), q.optional_int64(5),
                    q.optional_int64(6)};
        c.buckets = cached;
        if (c.totals.evicted) c.evicted_buckets = evicted;
        out.push_back({t, std::move(c)});
    }
    return out;
}

std::vector<Timed<MappedResidency>> Recording::mapped_residency(std::int64_t since_ms) const {
    std::vector<Timed<MappedResidency>> out;
    if (!db_->has_table("mapped_residency")) return out;
    std::map<std::pair<std::int64_t, std::int64_t>, BucketCounts> last;
    auto q = db_->prepare("SELECT t_ms, file_id, process_id, mapped_pages, present_pages, buckets "
                          "FROM mapped_residency ORDER BY t_ms, file_id, process_id");
    while (q.step()) {
        const std::int64_t t = q.int64(0);
        MappedResidency m{.file_id = q.int64(1), .process_id = q.int64(2)};
        BucketCounts& buckets = last[{m.file_id, m.process_id}];
        if (!q.is_null(5)) buckets = decode(q.blob(5));
        if (t <= since_ms) continue;
        m.mapped_pages = q.int64(3);
        m.present_pages = q.int64(4);
        m.buckets = buckets;
        out.push_back({t, std::move(m)});
    }
    return out;
}

} // namespace loaderlens
