// SPDX-License-Identifier: MIT
#include "loaderlens/export.hpp"

#include "json_util.hpp"
#include "loaderlens/format_version.hpp"
#include "loaderlens/merged_report.hpp"
#include "loaderlens/report.hpp"
#include "loaderlens/series.hpp"
#include "residency_json.hpp"

#include <fmt/format.h>
#include <unordered_map>

namespace loaderlens {

namespace {

using nlohmann::json;

json value(const Kib& v) {
    return v ? json(*v) : json(nullptr);
}

std::string csv_quote(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string out = "\"";
    for (char c : text)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

// A sample's Unix time in ns (the recording's start + its t_ms), empty when meta has no start.
std::string unix_ns_text(const std::optional<std::int64_t>& start, std::int64_t t_ms) {
    return start ? std::to_string(saturating_add(*start, saturating_mul(t_ms, 1'000'000))) : "";
}

using ProcessIndex = std::unordered_map<std::int64_t, ProcessInfo>;

ProcessIndex index_processes(const RecordingData& data) {
    ProcessIndex out;
    for (const ProcessInfo& p : data.processes)
        out.emplace(p.id, p);
    return out;
}

// The identity columns process_id,pid,role,slot,generation (empty for no process).
std::string csv_identity(const ProcessIndex& processes, std::int64_t process_id) {
    auto it = processes.find(process_id);
    if (it == processes.end()) return ",,,,";
    const ProcessInfo& p = it->second;
    return fmt::format("{},{},{},{},{}", p.id, p.key.pid, to_string(p.role),
                       p.slot >= 0 ? std::to_string(p.slot) : "",
                       p.generation >= 0 ? std::to_string(p.generation) : "");
}

// Rows are formatted into one buffer and written in blocks: a 1 h x 32-worker recording is
// ~10 M rows, and a string per field and an ostream call per row were most of the export's time.
class CsvWriter {
  public:
    CsvWriter(const RecordingData& data, std::ostream& out)
        : out_(out), start_unix_ns_(json_util::start_unix_ns(data.meta)) {
        const ProcessIndex processes = index_processes(data);
        for (const auto& [id, p] : processes)
            identities_.emplace(id, csv_identity(processes, id));
        for (const ObjectInfo& o : data.objects)
            objects_.emplace(o.id, o);
        // unix_ns is the last column, so readers by name and by position both still work.
        out_ << "t_s,source,process_id,pid,role,slot,generation,object,metric,value_kib,unix_ns\n";
    }
    void row(std::int64_t t_ms, const char* source, std::int64_t process_id,
             const std::string& object, const char* metric, const Kib& v) {
        auto to = std::back_inserter(buffer_);
        fmt::format_to(to, "{:.3f},{},{},", static_cast<double>(t_ms) / 1000.0, source,
                       identity(process_id));
        if (object.find_first_of(",\"\n") == std::string::npos)
            buffer_.append(object);
        else
            buffer_.append(csv_quote(object));
        fmt::format_to(to, ",{},", metric);
        if (v) fmt::format_to(to, "{}", *v);
        buffer_.push_back(',');
        if (start_unix_ns_)
            fmt::format_to(to, "{}",
                           saturating_add(*start_unix_ns_, saturating_mul(t_ms, 1'000'000)));
        buffer_.push_back('\n');
        if (buffer_.size() >= block) flush();
    }
    void flush() {
        out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
        buffer_.clear();
    }
    std::string object_name(std::int64_t id) const {
        auto it = objects_.find(id);
        if (it == objects_.end()) return "?";
        return it->second.path.empty() ? to_string(it->second.kind) : it->second.path;
    }

  private:
    static constexpr std::size_t block = 1 << 16;
    // The identity columns of a process, made once: rows of one sample come in runs of one process.
    const std::string& identity(std::int64_t process_id) {
        if (process_id != last_id_ || !last_identity_) {
            auto it = identities_.find(process_id);
            last_identity_ = it == identities_.end() ? &none_ : &it->second;
            last_id_ = process_id;
        }
        return *last_identity_;
    }
    std::ostream& out_;
    std::optional<std::int64_t> start_unix_ns_;
    std::unordered_map<std::int64_t, std::string> identities_;
    const std::string none_ = ",,,,";
    std::int64_t last_id_ = 0;
    const std::string* last_identity_ = nullptr;
    std::unordered_map<std::int64_t, ObjectInfo> objects_;
    fmt::memory_buffer buffer_;
};

} // namespace

void export_csv(const Recording& recording, std::ostream& out) {
    // Read whole before the first byte goes out: a damaged part of the recording (a
    // RecordingError) then leaves no partial CSV behind. Per-bucket vectors are
    // export_residency_csv's, not this one's.
    const RecordingData data = recording.read_all(ReadScope{.mapped_buckets = false});
    CsvWriter csv(data, out);
    for (const auto& [t, s] : data.fast) {
        csv.row(t, "statm", s.process_id, "", "rss", s.rss);
        csv.row(t, "status", s.process_id, "", "rss_anon", s.rss_anon);
        csv.row(t, "status", s.process_id, "", "rss_file", s.rss_file);
        csv.row(t, "status", s.process_id, "", "rss_shmem", s.rss_shmem);
        csv.row(t, "status", s.process_id, "", "swap", s.swap);
    }
    for (const auto& [t, s] : data.rollup) {
        const std::pair<const char*, Kib> figures[] = {{"pss", s.pss},
                                                       {"pss_anon", s.pss_anon},
                                                       {"pss_file", s.pss_file},
                                                       {"pss_shmem", s.pss_shmem},
                                                       {"uss", s.uss()},
                                                       {"shared_clean", s.shared_clean},
                                                       {"shared_dirty", s.shared_dirty},
                                                       {"private_clean", s.private_clean},
                                                       {"private_dirty", s.private_dirty},
                                                       {"swap_pss", s.swap_pss},
                                                       {"locked", s.locked}};
        // A reading kept while the tree stood still (its age in rollup.age_ms of the JSON), or a
        // composite: the kernel's reading of the rest plus the data files' share from pagemap.
        const char* source = s.pss_computed ? "smaps_rollup+pagemap"
                             : s.age_ms > 0 ? "smaps_rollup-kept"
                                            : "smaps_rollup";
        for (const auto& [name, v] : figures)
            csv.row(t, source, s.process_id, "", name, v);
    }
    for (const auto& m : data.maps) {
        const std::string object = csv.object_name(m.object_id);
        csv.row(m.t_ms, "smaps", m.process_id, object, "rss", m.figures.rss_kb);
        csv.row(m.t_ms, "smaps", m.process_id, object, "pss", m.figures.pss_kb);
        csv.row(m.t_ms, "smaps", m.process_id, object, "private",
                saturating_add(m.figures.private_clean_kb, m.figures.private_dirty_kb));
        csv.row(m.t_ms, "smaps", m.process_id, object, "shared",
                saturating_add(m.figures.shared_clean_kb, m.figures.shared_dirty_kb));
    }
    for (const auto& [t, c] : data.cgroup) {
        csv.row(t, "cgroup", 0, c.path, "usage", c.usage);
        csv.row(t, "cgroup", 0, c.path, "limit", c.limit);
        csv.row(t, "cgroup", 0, c.path, "anon", c.anon);
        csv.row(t, "cgroup", 0, c.path, "file", c.file);
        csv.row(t, "cgroup", 0, c.path, "shmem", c.shmem);
        csv.row(t, "cgroup", 0, c.path, "inactive_file", c.inactive_file);
    }
    std::unordered_map<std::int64_t, const ResidencyFile*> files;
    for (const ResidencyFile& f : data.residency_files)
        files.emplace(f.id, &f);
    auto file_of = [&files](std::int64_t id) -> const ResidencyFile* {
        auto it = files.find(id);
        return it == files.end() ? nullptr : it->second;
    };
    auto pages_kib = [&files](std::int64_t file_id, const std::optional<std::int64_t>& pages) {
        auto it = files.find(file_id);
        return pages && it != files.end()
                   ? Kib(saturating_mul(*pages, it->second->page_size) / 1024)
                   : Kib{};
    };
    for (const auto& [t, c] : data.cache_residency) {
        const ResidencyFile* f = file_of(c.file_id);
        const std::string path = f ? f->path : "?";
        const char* source = f ? to_string(f->method) : "?";
        csv.row(t, source, 0, path, "cached", pages_kib(c.file_id, c.totals.cached));
        csv.row(t, source, 0, path, "dirty", pages_kib(c.file_id, c.totals.dirty));
        csv.row(t, source, 0, path, "writeback", pages_kib(c.file_id, c.totals.writeback));
        csv.row(t, source, 0, path, "evicted", pages_kib(c.file_id, c.totals.evicted));
    }
    for (const auto& [t, m] : data.mapped_residency) {
        const ResidencyFile* f = file_of(m.file_id);
        const std::string path = f ? f->path : "?";
        csv.row(t, "pagemap", m.process_id, path, "present", pages_kib(m.file_id, m.present_pages));
        // Present pages divided among the tree's sharers: computed, not read (docs/figures.md).
        if (m.pss_kb) csv.row(t, "pagemap-computed", m.process_id, path, "pss", m.pss_kb);
    }
    // What each scheduler counts, per tick (docs/findings.md): source "scheduler", metric its key
    // (of a merged recording: the job's totals, summed over its parts).
    for (const SchedulerView& view : job_scheduler_series(data, recording.path()))
        for (const SeriesPoint& p : view.points)
            csv.row(p.t_ms, "scheduler", 0, "", view.key.c_str(), p.value);
    for (const auto& [t, s] : data.system) {
        csv.row(t, "meminfo", 0, "", "mem_available", s.mem_available);
        csv.row(t, "meminfo", 0, "", "cached", s.cached);
        csv.row(t, "statvfs", 0, "/dev/shm", "devshm_used", s.devshm_used);
    }
    csv.flush();
}

void export_residency_csv(const Recording& recording, std::ostream& out) {
    // Read whole before the first byte goes out (see export_csv).
    const RecordingData data = recording.read_all();
    std::unordered_map<std::int64_t, const ResidencyFile*> files;
    for (const ResidencyFile& f : data.residency_files)
        files.emplace(f.id, &f);
    const ProcessIndex processes = index_processes(data);
    const auto& cache = data.cache_residency;
    const auto& mapped = data.mapped_residency;
    const auto start = json_util::start_unix_ns(data.meta);
    out << "t_s,file,series,process_id,pid,role,slot,generation,bucket,first_byte,bytes,pages,"
           "unix_ns\n";
    auto rows = [&](std::int64_t t, std::int64_t file_id, const char* series,
                    std::int64_t process_id, const BucketCounts& buckets) {
        auto f = files.find(file_id);
        if (f == files.end()) return;
        const BucketLayout& layout = f->second->layout;
        const std::string prefix =
            fmt::format("{:.3f},{},{},{}", static_cast<double>(t) / 1000.0,
                        csv_quote(f->second->path), series, csv_identity(processes, process_id));
        const std::string unix_ns = unix_ns_text(start, t);
        const std::int64_t page = f->second->page_size;
        for (int b = 0; b < static_cast<int>(buckets.size()) && b < layout.count; ++b)
            out << fmt::format("{},{},{},{},{},{}\n", prefix, b,
                               saturating_mul(layout.first_page(b), page),
                               saturating_mul(layout.pages_in(b), page),
                               buckets[static_cast<std::size_t>(b)], unix_ns);
    };
    for (const auto& [t, c] : cache) {
        rows(t, c.file_id, "cached", 0, c.buckets);
        if (c.totals.evicted) rows(t, c.file_id, "evicted", 0, c.evicted_buckets);
    }
    for (const auto& [t, m] : mapped)
        rows(t, m.file_id, "present", m.process_id, m.buckets);
}

void export_json(const Recording& recording, std::ostream& out) {
    json j;
    const RecordingData data = recording.read_all();
    j["format_version"] = format_version::export_json;
    // Unix time of t_ms 0: a point's Unix time is started_unix_ns + t_ms * 1e6 (docs/outputs.md).
    const auto started = json_util::start_unix_ns(data.meta);
    j["started_unix_ns"] = started ? json(*started) : json(nullptr);
    j["meta"] = data.meta;
    if (!data.parts.empty()) { // a merged recording: its inputs (docs/merge.md)
        json& parts = j["parts"] = json::array();
        for (const RecordingPart& p : data.parts)
            parts.push_back({{"id", p.id},
                             {"name", p.name},
                             {"host", p.host},
                             {"job", p.job},
                             {"step", p.step},
                             {"task", p.task},
                             {"source", p.source},
                             {"start_unix_ns", p.start_unix_ns},
                             {"offset_ms", p.offset_ms},
                             {"duration_ms", p.duration_ms},
                             {"end", p.end_state},
                             {"meta", p.meta}});
    }
    j["processes"] = json::array();
    for (const auto& p : data.processes)
        j["processes"].push_back(json_util::process_identity(p));
    j["objects"] = json::array();
    for (const auto& o : data.objects)
        j["objects"].push_back({{"id", o.id},
                                {"kind", to_string(o.kind)},
                                {"path", o.path},
                                {"inode", o.inode},
                                {"size_bytes", value(o.size_bytes)}});
    json& series = j["series"];
    series["fast"] = json::array();
    for (const auto& [t, s] : data.fast)
        series["fast"].push_back({{"t_ms", t},
                                  {"process_id", s.process_id},
                                  {"rss", value(s.rss)},
                                  {"anon", value(s.rss_anon)},
                                  {"file", value(s.rss_file)},
                                  {"shmem", value(s.rss_shmem)},
                                  {"swap", value(s.swap)}});
    series["rollup"] = json::array();
    for (const auto& [t, s] : data.rollup)
        series["rollup"].push_back({{"t_ms", t},
                                    {"process_id", s.process_id},
                                    {"pss", value(s.pss)},
                                    {"pss_anon", value(s.pss_anon)},
                                    {"pss_file", value(s.pss_file)},
                                    {"pss_shmem", value(s.pss_shmem)},
                                    {"uss", value(s.uss())},
                                    {"shared_clean", value(s.shared_clean)},
                                    {"shared_dirty", value(s.shared_dirty)},
                                    {"private_clean", value(s.private_clean)},
                                    {"private_dirty", value(s.private_dirty)},
                                    {"swap", value(s.swap)},
                                    {"swap_pss", value(s.swap_pss)},
                                    {"locked", value(s.locked)},
                                    {"age_ms", s.age_ms},
                                    {"pss_computed", value(s.pss_computed)}});
    series["maps"] = json::array();
    for (const auto& m : data.maps)
        series["maps"].push_back({{"t_ms", m.t_ms},
                                  {"process_id", m.process_id},
                                  {"object_id", m.object_id},
                                  {"rss", m.figures.rss_kb},
                                  {"pss", m.figures.pss_kb},
                                  {"private_clean", m.figures.private_clean_kb},
                                  {"private_dirty", m.figures.private_dirty_kb},
                                  {"shared_clean", m.figures.shared_clean_kb},
                                  {"shared_dirty", m.figures.shared_dirty_kb},
                                  {"swap", m.figures.swap_kb}});
    series["cgroup"] = json::array();
    for (const auto& [t, c] : data.cgroup)
        series["cgroup"].push_back({{"t_ms", t},
                                    {"version", c.version},
                                    {"usage", value(c.usage)},
                                    {"peak", value(c.peak)},
                                    {"limit", value(c.limit)},
                                    {"unlimited", c.unlimited},
                                    {"anon", value(c.anon)},
                                    {"file", value(c.file)},
                                    {"shmem", value(c.shmem)},
                                    {"file_mapped", value(c.file_mapped)},
                                    {"active_file", value(c.active_file)},
                                    {"inactive_file", value(c.inactive_file)},
                                    {"oom_kill", value(c.oom_kill)}});
    series["system"] = json::array();
    for (const auto& [t, s] : data.system)
        series["system"].push_back({{"t_ms", t},
                                    {"mem_total", value(s.mem_total)},
                                    {"mem_available", value(s.mem_available)},
                                    {"cached", value(s.cached)},
                                    {"shmem", value(s.shmem)},
                                    {"devshm_used", value(s.devshm_used)}});
    j["residency"] = json_util::residency_series(data);
    // The tree's sums per tick, as the report's peaks and the plots take them (series API; of a
    // merged recording, summed over its parts).
    for (const Figure figure : {Figure::rss, Figure::pss, Figure::uss}) {
        json& sums = j["tree"][std::string(to_string(figure))];
        sums = json::array();
        for (const SeriesPoint& p : tree_series(data, figure, recording.path()).points)
            sums.push_back({{"t_ms", p.t_ms}, {"kib", value(p.value)}, {"partial", p.partial}});
    }
    for (const SchedulerView& view : job_scheduler_series(data, recording.path())) {
        json& points = j["schedulers"][view.key];
        points = json::array();
        for (const SeriesPoint& p : view.points)
            points.push_back({{"t_ms", p.t_ms}, {"kib", value(p.value)}, {"partial", p.partial}});
    }
    j["markers"] = json::array();
    for (const auto& m : data.markers)
        j["markers"].push_back({{"t_ms", m.t_ms}, {"source", m.source}, {"text", m.text}});
    // comm is cut at 15 bytes (maybe inside a UTF-8 character), paths may be Latin-1:
    // replace bad bytes, never fail the whole output.
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

} // namespace loaderlens
