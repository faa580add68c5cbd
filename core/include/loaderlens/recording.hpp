// Reads a recording, finished or still being written (WAL lets one writer and many readers work
// at once). The CLI report, the export and the GUI all read through this one API; `since_ms`
// lets a live reader fetch only what is new.
#pragma once

#include "loaderlens/loader_run.hpp"
#include "loaderlens/residency.hpp"
#include "loaderlens/types.hpp"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace loaderlens {

namespace sql {
class Database;
}

struct RecordingError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

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
};

struct MapRow {
    std::int64_t t_ms = 0, process_id = 0, object_id = 0;
    MappedObject figures; // kind/path/inode left empty: see objects()
};

class Recording {
  public:
    // Throws RecordingError with a one-line reason: missing, not SQLite, not a recording, a newer
    // schema, damaged or truncated.
    explicit Recording(const std::string& path);
    ~Recording();
    Recording(Recording&&) noexcept;

    const std::string& path() const { return path_; }
    std::string meta(const std::string& key, const std::string& fallback = "") const;
    std::map<std::string, std::string> all_meta() const;
    bool finished() const;

    std::vector<ProcessInfo> processes() const;
    std::vector<ObjectInfo> objects() const;
    std::vector<Timed<FastSample>> fast(std::int64_t since_ms = -1) const;
    std::vector<Timed<RollupSample>> rollup(std::int64_t since_ms = -1) const;
    std::vector<MapRow> maps(std::int64_t since_ms = -1) const;
    std::vector<Timed<CgroupSample>> cgroup(std::int64_t since_ms = -1) const;
    std::vector<Timed<SystemSample>> system(std::int64_t since_ms = -1) const;
    std::vector<Marker> markers() const;
    std::vector<Timed<Unavailability>> unavailable() const;
    std::vector<Timed<TierStat>> tier_stats() const;
    // Residency (empty for recordings older than schema 3). Rows in time order with every bucket
    // vector filled in, also where the recording stored "unchanged".
    std::vector<ResidencyFile> residency_files() const;
    std::vector<Timed<CacheResidency>> cache_residency(std::int64_t since_ms = -1) const;
    std::vector<Timed<MappedResidency>> mapped_residency(std::int64_t since_ms = -1) const;
    // What the reference loader reported (empty unless the run came from `loaderlens replay`).
    LoaderRun loader_run() const;
    // The last time any sample was taken (ms since start), -1 for an empty recording.
    std::int64_t last_sample_ms() const;

  private:
    std::string path_;
    std::unique_ptr<sql::Database> db_;
};

} // namespace loaderlens
