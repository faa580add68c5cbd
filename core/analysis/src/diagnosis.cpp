// SPDX-License-Identifier: MIT
// diagnose(): the parts in order, each from the recording's rows and what came before it.
#include "diagnosis_parts.hpp"
#include "loaderlens/units.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace loaderlens {

bool is_shared_library(const std::string& path) {
    return named_like_shared_library(path);
}

const char* to_string(Severity severity) {
    switch (severity) {
    case Severity::critical:
        return "critical";
    case Severity::warning:
        return "warning";
    case Severity::info:
        return "info";
    }
    return "info";
}

const SchedulerView* Diagnosis::view(const std::string& key) const {
    for (const SchedulerView& v : schedulers)
        if (v.key == key) return &v;
    return nullptr;
}

const GrowthFigure* SlotGrowth::find(const std::string& figure, const std::string& path) const {
    for (const GrowthFigure& f : figures)
        if (f.figure == figure && f.path == path) return &f;
    return nullptr;
}

std::optional<std::int64_t> GrowthFigure::growth_per_epoch_kb() const {
    std::optional<std::int64_t> first, last;
    std::int64_t steps = 0;
    for (const Kib& v : at_epoch_end) {
        if (!v) continue;
        if (!first)
            first = *v;
        else
            ++steps;
        last = *v;
    }
    if (!first || steps == 0) return std::nullopt;
    return saturating_sub(*last, *first) / steps;
}

namespace diagnosis {

std::string size_text(std::int64_t kb) {
    if (kb < 0) return "-" + format_kib(saturating_sub(0, kb));
    return format_kib(kb);
}

std::string meta_text(const std::map<std::string, std::string>& meta, const std::string& key) {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
}

std::optional<std::int64_t> meta_number(const RecordingData& data, const std::string& key) {
    auto it = data.meta.find(key);
    if (it == data.meta.end()) return std::nullopt;
    std::int64_t value = 0;
    const char* end = it->second.data() + it->second.size();
    auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
    if (ec != std::errc{} || value < 0 || (ptr != end && std::string_view(ptr, end) != "M"))
        return std::nullopt;
    return value;
}

namespace {
// Drops each of `fields` whose value is not of its kind.
void keep_typed(
    nlohmann::json& object,
    std::initializer_list<std::pair<const char*, bool (nlohmann::json::*)() const noexcept>>
        fields) {
    for (const auto& [key, is_kind] : fields)
        if (object.contains(key) && !(object[key].*is_kind)()) object.erase(key);
}
} // namespace

nlohmann::json loader_config(const RecordingData& data) {
    if (data.loader.config_json.empty()) return nlohmann::json::object();
    auto config = nlohmann::json::parse(data.loader.config_json, nullptr, false);
    if (!config.is_object()) return nlohmann::json::object();
    using J = nlohmann::json;
    keep_typed(config, {{"read", &J::is_string},
                        {"dataset", &J::is_string},
                        {"lmdb_open", &J::is_string},
                        {"workers", &J::is_number},
                        {"prefetch", &J::is_number},
                        {"pin_staging_bytes", &J::is_number},
                        {"batch_ring_bytes", &J::is_number},
                        {"hdf5", &J::is_object}});
    if (config.contains("hdf5"))
        keep_typed(config["hdf5"], {{"open", &J::is_string},
                                    {"storage", &J::is_string},
                                    {"chunk_cache_bytes", &J::is_number},
                                    {"chunk_bytes", &J::is_number},
                                    {"filters", &J::is_array},
                                    {"chunk_cache_default", &J::is_boolean}});
    return config;
}

} // namespace diagnosis

namespace {

// Wide enough to see an epoch's growth, narrow enough for an 80-column terminal with a label.
constexpr int timeline_columns = 48;

} // namespace

Diagnosis diagnose(const RecordingData& data, const ReportData& report,
                   const DiagnosisOptions& options) {
    return diagnose(data, report, options, FigureModel(data));
}

Diagnosis diagnose(const RecordingData& data, const ReportData& report,
                   const DiagnosisOptions& options, const FigureModel& model) {
    using namespace diagnosis;
    Diagnosis d;
    const ProcessRows& rows = model;
    read_recorder_size(data, d);
    if (!data.cgroup.empty()) d.cgroup_before_kb = data.cgroup.front().sample.usage;
    for (const auto& [t, c] : data.cgroup)
        if (c.usage && (!d.cgroup_at_peak || *c.usage > d.cgroup_at_peak->usage.value_or(-1)))
            d.cgroup_at_peak = c;
    d.limit = resolve_limit(data, options);
    d.site = site_accounting(data.meta, options.accounting);
    d.node_tasks = node_task_ids(data.meta);
    if (d.node_tasks.size() > 1) {
        if (auto own = data.meta.find("slurm_procid"); own != data.meta.end())
            d.node_tasks_found.push_back(own->second);
        for (const TaskOnNode& sibling : options.siblings)
            d.node_tasks_found.push_back(sibling.task);
        d.node_tasks_missing = options.siblings_missing;
    }
    d.schedulers = scheduler_views(data, &report, d, options);
    d.epochs = find_epochs(data, d.epochs_source);
    d.growth = slot_growth(data, rows, d.epochs, report.duration_ms);
    d.timelines = slot_timelines(data, rows, report.duration_ms, timeline_columns);
    const CauseGaps gaps = gap_shares(data, rows, d);

    const Context context{data, report, rows, d, gaps};
    std::vector<Finding> findings;
    limit_findings(context, findings);
    growth_findings(context, findings);
    sharing_findings(context, findings);
    loader_findings(context, findings);
    hdf5_findings(context, findings);
    kill_findings(context, findings);
    std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
        if (a.severity != b.severity)
            return static_cast<int>(a.severity) < static_cast<int>(b.severity);
        return a.explains_kb > b.explains_kb;
    });
    d.findings = std::move(findings);
    return d;
}

} // namespace loaderlens
