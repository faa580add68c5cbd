// SPDX-License-Identifier: MIT
#include "row_writer.hpp"

#include "recording_tables.hpp"

namespace loaderlens {

void bind_part(sql::Statement& statement, int index, int part) {
    if (part > 0)
        statement.bind(index, std::int64_t{part});
    else
        statement.bind_null(index);
}

RowWriter::RowWriter(sql::Database& db)
    : db_(db), meta_(db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")),
      insert_process_(db.prepare(recording_tables::insert_sql("processes"))),
      update_process_(db.prepare(
          "UPDATE processes SET ppid=?4, parent_id=?5, comm=?6, cmdline=?7, role=?8, slot=?9, "
          "generation=?10, birth_ms=?11, exit_ms=?12, exit_status=?13, revision=?14 WHERE "
          "id=?1 AND pid=?2 AND start_ticks=?3")),
      fast_(db.prepare(recording_tables::insert_sql("fast_samples"))),
      rollup_(db.prepare(recording_tables::insert_sql("rollup_samples"))),
      object_(db.prepare(recording_tables::insert_sql("objects", {"id"}))),
      object_executable_(db.prepare("UPDATE objects SET executable=1 WHERE id=?1")),
      map_(db.prepare(recording_tables::insert_sql("map_samples"))),
      cgroup_(db.prepare(recording_tables::insert_sql("cgroup_samples"))),
      system_(db.prepare(recording_tables::insert_sql("system_samples"))),
      marker_(db.prepare(recording_tables::insert_sql("markers"))),
      unavailable_(db.prepare(recording_tables::insert_sql("unavailable"))),
      tier_(db.prepare(recording_tables::insert_sql("tier_stats"))) {}

void RowWriter::meta(const std::string& key, const std::string& value) {
    meta_.bind(1, key).bind(2, value).run();
}

void RowWriter::process(const ProcessInfo& p, std::int64_t revision, bool insert) {
    auto& s = insert ? insert_process_ : update_process_;
    s.bind(1, p.id)
        .bind(2, std::int64_t{p.key.pid})
        .bind(3, static_cast<std::int64_t>(p.key.start_ticks));
    s.bind(4, std::int64_t{p.ppid}).bind(5, p.parent_id).bind(6, p.comm).bind(7, p.cmdline);
    s.bind(8, std::string(to_string(p.role)));
    if (p.role == Role::worker)
        s.bind(9, std::int64_t{p.slot}).bind(10, std::int64_t{p.generation});
    s.bind(11, p.birth_ms).bind(12, Kib(p.exit_ms));
    if (p.exit_status) s.bind(13, std::int64_t{*p.exit_status});
    s.bind(14, revision); // a reader's cursor sees the row again (Cursor::process_revision)
    if (insert) bind_part(s, 15, p.part); // a process never changes part
    s.run();
}

void RowWriter::fast(std::int64_t t, const FastSample& f) {
    fast_.bind(1, t).bind(2, f.process_id).bind(3, f.rss).bind(4, f.rss_anon);
    fast_.bind(5, f.rss_file).bind(6, f.rss_shmem).bind(7, f.swap).run();
}

void RowWriter::rollup(std::int64_t t, const RollupSample& r) {
    auto& s = rollup_;
    s.bind(1, t).bind(2, r.process_id).bind(3, r.rss).bind(4, r.pss).bind(5, r.pss_anon);
    s.bind(6, r.pss_file).bind(7, r.pss_shmem).bind(8, r.shared_clean).bind(9, r.shared_dirty);
    s.bind(10, r.private_clean).bind(11, r.private_dirty).bind(12, r.swap).bind(13, r.swap_pss);
    s.bind(14, r.locked).bind(15, r.age_ms).bind(16, r.pss_computed).run();
}

std::int64_t RowWriter::object(MappingKind kind, const std::string& path, std::uint64_t inode,
                               const std::optional<std::int64_t>& size_bytes,
                               std::optional<bool> executable) {
    object_.bind(1, std::string(to_string(kind)))
        .bind(2, path)
        .bind(3, static_cast<std::int64_t>(inode))
        .bind(4, Kib(size_bytes))
        .bind(5, executable ? Kib(*executable ? 1 : 0) : Kib());
    object_.run();
    return db_.last_insert_rowid();
}

void RowWriter::object_executable(std::int64_t id) {
    object_executable_.bind(1, id).run();
}

void RowWriter::map(std::int64_t t, std::int64_t process_id, std::int64_t object_id,
                    const MappedObject& o) {
    auto& s = map_;
    s.bind(1, t).bind(2, process_id).bind(3, object_id).bind(4, o.size_kb).bind(5, o.rss_kb);
    s.bind(6, o.pss_kb).bind(7, o.shared_clean_kb).bind(8, o.shared_dirty_kb);
    s.bind(9, o.private_clean_kb).bind(10, o.private_dirty_kb).bind(11, o.swap_kb).run();
}

void RowWriter::cgroup(std::int64_t t, const CgroupSample& c) {
    auto& s = cgroup_;
    s.bind(1, t).bind(2, c.version).bind(3, c.path).bind(4, c.usage).bind(5, c.peak);
    s.bind(6, c.limit).bind(7, std::int64_t{c.unlimited}).bind(8, c.anon).bind(9, c.file);
    s.bind(10, c.shmem).bind(11, c.file_mapped).bind(12, c.active_file);
    s.bind(13, c.inactive_file).bind(14, Kib(c.failcnt)).bind(15, Kib(c.oom_kill));
    bind_part(s, 16, c.part);
    s.run();
}

void RowWriter::system(std::int64_t t, const SystemSample& y) {
    auto& s = system_;
    s.bind(1, t).bind(2, y.mem_total).bind(3, y.mem_available).bind(4, y.cached);
    s.bind(5, y.shmem).bind(6, y.dirty).bind(7, y.devshm_used).bind(8, y.devshm_size);
    s.bind(9, y.active_file).bind(10, y.inactive_file).bind(11, y.writeback);
    s.bind(12, y.kreclaimable);
    bind_part(s, 13, y.part);
    s.run();
}

void RowWriter::marker(const Marker& m) {
    marker_.bind(1, m.t_ms).bind(2, m.source).bind(3, m.text);
    bind_part(marker_, 4, m.part);
    marker_.run();
}

void RowWriter::unavailable(std::int64_t t, const Unavailability& u) {
    unavailable_.bind(1, t).bind(2, u.process_id).bind(3, u.tier).bind(4, u.reason);
    bind_part(unavailable_, 5, u.part);
    unavailable_.run();
}

void RowWriter::tier(std::int64_t t, const TierStat& ts) {
    tier_.bind(1, t).bind(2, ts.tier).bind(3, ts.interval_ms).bind(4, ts.cpu_us_per_run);
    tier_.bind(5, std::int64_t{ts.processes});
    bind_part(tier_, 6, ts.part);
    tier_.run();
}

} // namespace loaderlens
