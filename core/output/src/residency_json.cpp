// SPDX-License-Identifier: MIT
#include "residency_json.hpp"

#include "json_util.hpp"
#include "loaderlens/residency_generations.hpp"

namespace loaderlens::json_util {

namespace {

using nlohmann::json;

json pages_peak(const Peak& p) {
    return {{"pages", optional(p.value)}, {"t_ms", p.value ? json(p.t_ms) : json(nullptr)}};
}

json factor(const std::optional<double>& value) {
    return value ? json(*value) : json(nullptr);
}

json checkpoint(const ResidencyCheckpoint& c) {
    return {{"t_ms", c.t_ms},
            {"read_fraction", c.read_fraction},
            {"cached_fraction", c.cached_fraction},
            {"cache_amplification", factor(c.cache_amplification)},
            {"worker_mapped_fraction", factor(c.worker_mapped_fraction)},
            {"worker_mapped_amplification", factor(c.worker_mapped_amplification)}};
}

} // namespace

json residency_file(const ResidencyFile& f) {
    return {{"id", f.id},
            {"path", f.path},
            {"device", f.identified() ? json(f.device) : json(nullptr)},
            {"inode", f.identified() ? json(f.inode) : json(nullptr)},
            {"size_bytes", f.identified() ? json(f.size_bytes) : json(nullptr)},
            {"page_size", f.page_size},
            {"pages", f.layout.file_pages},
            {"buckets", f.layout.count},
            {"bucket_pages", f.layout.bucket_pages},
            {"method", to_string(f.method)},
            {"unavailable_reason",
             f.unavailable_reason.empty() ? json(nullptr) : json(f.unavailable_reason)},
            {"requested", f.requested},
            {"first_ms", f.first_ms}};
}

json residency_summary(const FileResidencySummary& s) {
    json out = residency_file(s.file);
    out["samples"] = s.samples;
    out["cached"] = {{"first_pages", optional(s.first_cached)},
                     {"peak", pages_peak(s.cached)},
                     {"final_pages", optional(s.final_cached)},
                     {"time_to_90_percent_ms", optional(s.time_to_90_ms)}};
    out["evicted_peak"] = pages_peak(s.evicted);
    out["evicted_at_start_pages"] = optional(s.evicted_at_start);
    out["evicted_during_pages_at_least"] = optional(s.evicted_during);
    // The text report's "read in rotation" line: the oldest carried part (null: all read always).
    out["carried_max_age_ms"] = optional(s.max_carried_age_ms);
    out["refaulted_pages_at_least"] = optional(s.refaulted);
    out["dirty_peak"] = pages_peak(s.dirty);
    out["writeback_peak"] = pages_peak(s.writeback);
    out["processes"] = json::array();
    for (const auto& p : s.processes)
        out["processes"].push_back(
            {{"process_id", p.process_id},
             {"present_peak", pages_peak(p.present)},
             {"final_present_pages", p.final_present},
             {"mapped_pages", p.mapped_pages},
             {"computed",
              {{"source", "pagemap"},
               {"rss_peak_kb", optional(p.rss.value)},
               {"rss_peak_ms", p.rss.value ? json(p.rss.t_ms) : json(nullptr)},
               {"pss_peak_kb", optional(p.pss.value)},
               {"pss_peak_ms", p.pss.value ? json(p.pss.t_ms) : json(nullptr)},
               {"final_rss_kb", optional(p.final_rss)},
               {"final_pss_kb", optional(p.final_pss)},
               {"outside_sharers", optional(p.outside_sharers)},
               {"outside_unreadable", optional(p.outside_unreadable)}}}});
    if (s.loader_data_file) {
        json loader{{"cached_before_pages", optional(s.cached_before)},
                    {"checkpoints", json::array()},
                    {"headline", s.headline ? checkpoint(*s.headline) : json(nullptr)}};
        for (const auto& c : s.checkpoints)
            loader["checkpoints"].push_back(checkpoint(c));
        out["loader"] = std::move(loader);
    }
    return out;
}

json residency_series(const RecordingData& data) {
    json out{{"files", json::array()}, {"cache", json::array()}, {"mapped", json::array()}};
    // Every generation of a file that changed size while followed, each with its own layout (the
    // rows' buckets follow it); latest_generation names the one that gives the file's size now.
    const auto latest = latest_generations(data.residency_files);
    for (const auto& f : data.residency_files) {
        json file = residency_file(f);
        file["latest_generation"] = latest.at(f.id);
        out["files"].push_back(std::move(file));
    }
    for (const auto& [t, c] : data.cache_residency)
        out["cache"].push_back(
            {{"t_ms", t},
             {"file_id", c.file_id},
             {"cached", c.totals.cached},
             {"dirty", optional(c.totals.dirty)},
             {"writeback", optional(c.totals.writeback)},
             {"evicted", optional(c.totals.evicted)},
             {"recently_evicted", optional(c.totals.recently_evicted)},
             {"buckets", c.buckets},
             {"evicted_buckets", c.totals.evicted ? json(c.evicted_buckets) : json(nullptr)},
             // Schema 9: buckets read now; the others carried, the oldest this old (null: all).
             {"read_buckets", c.read_buckets ? json(*c.read_buckets) : json(nullptr)},
             {"carried_age_ms", c.carried_age_ms ? json(*c.carried_age_ms) : json(nullptr)}});
    for (const auto& [t, m] : data.mapped_residency)
        out["mapped"].push_back({{"t_ms", t},
                                 {"file_id", m.file_id},
                                 {"process_id", m.process_id},
                                 {"mapped_pages", m.mapped_pages},
                                 {"present_pages", m.present_pages},
                                 {"buckets", m.buckets}});
    return out;
}

} // namespace loaderlens::json_util
