// SPDX-License-Identifier: MIT
#include "synthetic_recording.hpp"

#include <algorithm>
#include <numeric>

namespace loaderlens::bench {

namespace {
constexpr std::int64_t fast_ms = 100, rollup_ms = 500, deep_offset_ms = 20;
constexpr std::int64_t tier_stats_every_s = 10; // as Session::note_tier
constexpr const char* data_file = "/data/imagenet-shard-7g.bin";
constexpr std::uint64_t data_file_inode = 4242;

// Object `o` of a process's maps: the data file, its heap, anonymous memory, then others.
MappedObject mapped_object(int o) {
    MappedObject object;
    object.kind = o == 0   ? MappingKind::file
                  : o == 1 ? MappingKind::heap
                  : o == 2 ? MappingKind::anon
                           : MappingKind::other;
    if (o == 0) {
        object.path = data_file;
        object.inode = data_file_inode;
    } else if (o >= 3) {
        object.path = "[object " + std::to_string(o) + "]";
    }
    return object;
}
} // namespace

RowCounts& RowCounts::operator+=(const RowCounts& o) {
    fast += o.fast;
    rollup += o.rollup;
    maps += o.maps;
    cgroup += o.cgroup;
    system += o.system;
    markers += o.markers;
    cache += o.cache;
    mapped += o.mapped;
    return *this;
}

struct SyntheticRecording::Process {
    ProcessInfo info;
    std::int64_t rss_kb = 0; // drifts a little every fast tick
    BucketCounts present;    // its present pages of the data file, per bucket (workers)
};

SyntheticRecording::SyntheticRecording(const std::string& path, const RecordingShape& shape)
    : path_(path), shape_(shape), recorder_(std::make_unique<Recorder>(path, false)) {
    // What `record` writes that the report reads (cli/run_meta.cpp).
    recorder_->set_meta("mode", "launch");
    recorder_->set_meta("command", "python3 train.py (synthetic: loaderlens reading bench)");
    recorder_->set_meta("start_unix_ns", "1700000000000000000");
    for (const auto& [tier, ms] : {std::pair{"fast", 100},
                                   {"rollup", 500},
                                   {"maps", 1000},
                                   {"cgroup", 1000},
                                   {"residency", 1000}})
        recorder_->set_meta(std::string("interval_") + tier + "_ms", std::to_string(ms));
    recorder_->set_meta("residency_buckets", std::to_string(shape.residency_buckets));
    recorder_->commit();

    file_.id = 1;
    file_.path = data_file;
    file_.device = 0xfd00;
    file_.inode = data_file_inode;
    file_.size_bytes = shape.data_file_bytes;
    file_.page_size = 4096;
    file_.layout =
        BucketLayout::make((shape.data_file_bytes + 4095) / 4096, shape.residency_buckets);
    file_.method = CacheMethod::cachestat;
    file_.requested = false;
    cached_.assign(static_cast<std::size_t>(file_.layout.count), 0);
    evicted_ = cached_;

    live_.push_back(std::make_unique<Process>(Process{born(Role::main, 0, -1, -1), 900'000, {}}));
    for (int slot = 0; slot < shape.workers; ++slot)
        live_.push_back(
            std::make_unique<Process>(Process{born(Role::worker, 0, slot, 0), 2'400'000, cached_}));
    for (int h = 0; h < shape.helpers; ++h)
        live_.push_back(std::make_unique<Process>(Process{born(Role::helper, 0, -1, -1), 60'000}));
}

SyntheticRecording::~SyntheticRecording() = default;

std::uint64_t SyntheticRecording::random() { // xorshift64*: cheap, the same file every run
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545f4914f6cdd1dULL;
}

ProcessInfo SyntheticRecording::born(Role role, std::int64_t t, int slot, int generation) {
    ProcessInfo p;
    p.id = next_id_++;
    p.key = {static_cast<pid_t>(40000 + p.id), static_cast<std::uint64_t>(1000 + t / 10)};
    p.ppid = role == Role::main ? 39999 : 40001;
    p.parent_id = role == Role::main ? 0 : 1;
    p.comm = role == Role::main ? "python3" : role == Role::worker ? "pt_data_worker" : "python3";
    p.cmdline = "python3 train.py";
    p.role = role;
    p.slot = slot;
    p.generation = generation;
    p.birth_ms = t;
    return p;
}

// A few buckets gain (or lose) pages: reading moves through the file.
void SyntheticRecording::change_some(BucketCounts& buckets) {
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int i = 0; i < changes; ++i) {
        auto& b = buckets[random() % buckets.size()];
        const auto room = static_cast<std::int32_t>(file_.layout.bucket_pages);
        b = std::clamp<std::int32_t>(b + static_cast<std::int32_t>(random() % 512) - 128, 0, room);
    }
}

void SyntheticRecording::refork_workers(std::int64_t t, SampleBatch& batch) {
    ++generation_;
    for (auto& p : live_) {
        if (p->info.role != Role::worker) continue;
        p->info.exit_ms = t;
        p->info.exit_status = 0;
        batch.exited.push_back(p->info);
        p->info = born(Role::worker, t, p->info.slot, generation_);
        p->present.assign(cached_.size(), 0);
        batch.born.push_back(p->info);
    }
}

void SyntheticRecording::fast_batch(std::int64_t t, bool first_of_second, RowCounts& rows) {
    SampleBatch b;
    b.t_ms = t;
    const std::int64_t second = t / 1000;
    if (t == 0)
        for (const auto& p : live_)
            b.born.push_back(p->info);
    else if (first_of_second && shape_.refork_every_s > 0 && second % shape_.refork_every_s == 0)
        refork_workers(t, b);
    for (auto& p : live_) {
        p->rss_kb += static_cast<std::int64_t>(random() % 2049) - 1024;
        const std::int64_t file_kb = p->rss_kb * 3 / 4;
        b.fast.push_back({p->info.id, p->rss_kb, p->rss_kb - file_kb - 4096, file_kb, 4096, 0});
    }
    rows.fast += b.fast.size();
    if (first_of_second) {
        std::int64_t sum = 0;
        for (const auto& p : live_)
            sum += p->rss_kb;
        CgroupSample c{"v2", "/user.slice/job-1", sum / 2, sum / 2 + 1'000'000, 64'000'000};
        c.anon = sum / 4;
        c.file = sum / 4;
        c.shmem = c.file_mapped = c.active_file = c.inactive_file = 1024;
        c.oom_kill = 0;
        b.cgroup = c;
        SystemSample s;
        s.mem_total = 64'000'000;
        s.mem_available = 64'000'000 - sum / 2;
        s.cached = s.shmem = s.dirty = s.devshm_used = s.devshm_size = 1024;
        s.active_file = s.inactive_file = s.writeback = s.kreclaimable = 1024;
        b.system = s;
        rows.cgroup += 1;
        rows.system += 1;
        if (second % tier_stats_every_s == 0) {
            const int count = static_cast<int>(live_.size());
            b.tier_stats.push_back({"fast", fast_ms, 180.0, count});
            b.tier_stats.push_back({"cgroup", 1000, 40.0, count});
        }
        if (shape_.marker_every_s > 0 && second % shape_.marker_every_s == 0) {
            b.markers.push_back({t, "env-file", "epoch " + std::to_string(second)});
            rows.markers += 1;
        }
    }
    recorder_->write(b);
}

void SyntheticRecording::deep_batch(std::int64_t t, bool full, RowCounts& rows) {
    SampleBatch b;
    b.t_ms = t;
    for (const auto& p : live_) {
        RollupSample r;
        r.process_id = p->info.id;
        r.rss = p->rss_kb;
        r.pss = p->rss_kb / 3;
        r.pss_anon = r.pss_file = r.pss_shmem = p->rss_kb / 9;
        r.shared_clean = p->rss_kb / 2;
        r.shared_dirty = 0;
        r.private_clean = p->rss_kb / 8;
        r.private_dirty = p->rss_kb / 8;
        r.swap = r.swap_pss = r.locked = 0;
        b.rollup.push_back(r);
    }
    rows.rollup += b.rollup.size();
    const std::int64_t second = t / 1000;
    if (full) {
        for (const auto& p : live_) {
            MapsSample m{p->info.id, {}};
            for (int o = 0; o < shape_.objects_per_process; ++o) {
                MappedObject object = mapped_object(o);
                object.size_kb = object.rss_kb = p->rss_kb / shape_.objects_per_process;
                object.pss_kb = object.rss_kb / 3;
                object.shared_clean_kb = object.rss_kb / 2;
                object.private_clean_kb = object.private_dirty_kb = object.rss_kb / 4;
                m.objects.push_back(object);
            }
            rows.maps += m.objects.size();
            b.maps.push_back(std::move(m));
        }
        if (second == 0) b.residency.new_files.push_back(file_);
        if (second == 0 || chance(shape_.cache_change)) {
            change_some(cached_);
            change_some(evicted_);
        }
        CacheResidency c{.file_id = file_.id};
        c.totals.cached = std::accumulate(cached_.begin(), cached_.end(), std::int64_t{0});
        c.totals.dirty = c.totals.writeback = 0;
        c.totals.evicted = std::accumulate(evicted_.begin(), evicted_.end(), std::int64_t{0});
        c.totals.recently_evicted = *c.totals.evicted / 2;
        c.buckets = cached_;
        c.evicted_buckets = evicted_;
        b.residency.cache.push_back(std::move(c));
        for (auto& p : live_) {
            if (p->info.role != Role::worker) continue;
            if (chance(shape_.mapped_change)) change_some(p->present);
            b.residency.mapped.push_back(
                {file_.id, p->info.id, file_.layout.file_pages,
                 std::accumulate(p->present.begin(), p->present.end(), std::int64_t{0}),
                 p->present});
        }
        rows.cache += b.residency.cache.size();
        rows.mapped += b.residency.mapped.size();
        if (second % tier_stats_every_s == 0) {
            const int count = static_cast<int>(live_.size());
            b.tier_stats.push_back({"rollup", rollup_ms, 900.0, count});
            b.tier_stats.push_back({"maps", 1000, 2500.0, count});
            b.tier_stats.push_back({"residency", 1000, 1400.0, count});
        }
    }
    recorder_->write(b);
}

RowCounts SyntheticRecording::write_seconds(std::int64_t seconds) {
    RowCounts rows;
    for (std::int64_t end = next_second_ + seconds; next_second_ < end; ++next_second_) {
        const std::int64_t start = next_second_ * 1000;
        // The session's queue order: each batch at its time, fast and deep interleaved.
        for (std::int64_t k = 0; k < 1000 / fast_ms; ++k) {
            const std::int64_t t = start + k * fast_ms;
            fast_batch(t, k == 0, rows);
            if (k * fast_ms % rollup_ms == 0) deep_batch(t + deep_offset_ms, k == 0, rows);
        }
        recorder_->commit();
    }
    total_ += rows;
    return rows;
}

void SyntheticRecording::set_meta(const std::string& key, const std::string& value) {
    recorder_->set_meta(key, value);
}

void SyntheticRecording::finish() {
    recorder_->finish("finished", next_second_ * 1000);
    recorder_.reset();
}

} // namespace loaderlens::bench
