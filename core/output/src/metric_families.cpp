// SPDX-License-Identifier: MIT
#include "metric_families.hpp"

#include <charconv>

namespace loaderlens::metrics {

namespace {

// Help texts say where the figure comes from (docs/figures.md) and stay one plain line.
constexpr std::array<FamilySpec, family_count> specs{{
    {"loaderlens_recording_info", "",
     "The recording: always 1, its host, kernel and loaderlens version as labels."},
    {"loaderlens_recording_live", "",
     "1 while the recording is being written, 0 once the recorder ended it."},
    {"loaderlens_sample_timestamp_seconds", "seconds",
     "Wall-clock time (Unix seconds) of the newest sample in the recording."},
    {"loaderlens_textfile_write_timestamp_seconds", "seconds",
     "Wall-clock time (Unix seconds) of this rewrite of the live textfile by its running "
     "recorder; absent from the file left at the end. Alert on time() minus it: a recorder killed "
     "outright stops rewriting."},
    {"loaderlens_recorder_rss_bytes", "bytes",
     "The recorder's own RSS now (VmRSS of its /proc/PID/status): a process of the step, counted "
     "by SLURM with the rest."},
    {"loaderlens_recorder_peak_rss_bytes", "bytes",
     "The recorder's own peak RSS (VmHWM): its share of jobacct_gather/linux's count at the peak."},
    {"loaderlens_recorder_pss_bytes", "bytes", "The recorder's own PSS (its smaps_rollup Pss)."},
    {"loaderlens_recorder_rss_anon_bytes", "bytes",
     "The recorder's own RssAnon: its share of SLURM NoShared's count."},
    {"loaderlens_process_rss_bytes", "bytes",
     "RSS (statm, fast tier): every resident page mapped, shared or not. Per process, or per "
     "role and worker slot in the live textfile."},
    {"loaderlens_process_rss_anon_bytes", "bytes",
     "Resident anonymous memory (RssAnon of /proc/PID/status)."},
    {"loaderlens_process_rss_file_bytes", "bytes",
     "Resident file pages mapped (RssFile of /proc/PID/status)."},
    {"loaderlens_process_rss_shmem_bytes", "bytes",
     "Resident shared memory: /dev/shm, SysV, shared anonymous (RssShmem of /proc/PID/status)."},
    {"loaderlens_process_swap_bytes", "bytes",
     "Anonymous memory swapped out (VmSwap of /proc/PID/status)."},
    {"loaderlens_process_pss_bytes", "bytes",
     "PSS (smaps_rollup, rollup tier): each page divided among the processes mapping it."},
    {"loaderlens_process_uss_bytes", "bytes",
     "USS: Private_Clean + Private_Dirty of smaps_rollup, pages no other process maps."},
    {"loaderlens_process_pss_anon_bytes", "bytes", "Pss_Anon of smaps_rollup."},
    {"loaderlens_process_pss_file_bytes", "bytes", "Pss_File of smaps_rollup."},
    {"loaderlens_process_pss_shmem_bytes", "bytes", "Pss_Shmem of smaps_rollup."},
    {"loaderlens_process_private_dirty_bytes", "bytes",
     "Private_Dirty of smaps_rollup: pages written by this process alone, copy-on-write copies "
     "included."},
    {"loaderlens_tree_rss_bytes", "bytes",
     "Sum of RSS over the tree's processes at one fast tick: what SLURM jobacct_gather/linux "
     "sums."},
    {"loaderlens_tree_pss_bytes", "bytes",
     "Sum of PSS over the tree's processes at one rollup tick: what SLURM UsePss sums."},
    {"loaderlens_tree_uss_bytes", "bytes",
     "Sum of USS over the tree's processes at one rollup tick."},
    {"loaderlens_scheduler_bytes", "bytes",
     "What a scheduler or the kernel counts for the tree (label view), the recorder's own memory "
     "left out."},
    {"loaderlens_scheduler_peak_bytes", "bytes",
     "The highest loaderlens_scheduler_bytes of the view so far."},
    {"loaderlens_scheduler_limit_bytes", "bytes",
     "The memory limit the view is held against (--mem-limit, SLURM --mem, the cgroup's limit)."},
    {"loaderlens_scheduler_counted_bytes", "bytes",
     "What the view counts for the step now with the recorder in it: loaderlens_scheduler_bytes "
     "plus the recorder's own RSS, PSS or RssAnon as the view counts (a cgroup view has it "
     "already)."},
    {"loaderlens_scheduler_counted_peak_bytes", "bytes",
     "The view's peak plus the recorder's share, as the report's COUNTED column: the figure held "
     "against the limit (slurm_linux adds the recorder's peak RSS)."},
    {"loaderlens_cgroup_usage_bytes", "bytes",
     "Memory charged to the tree's cgroup (v2 memory.current, v1 memory.usage_in_bytes)."},
    {"loaderlens_cgroup_limit_bytes", "bytes",
     "The cgroup's effective memory limit (v2 memory.max up the hierarchy, v1 "
     "hierarchical_memory_limit)."},
    {"loaderlens_file_rss_bytes", "bytes",
     "A followed data file's pages present in the tree's processes, summed over them (pagemap, "
     "residency tier)."},
    {"loaderlens_file_pss_bytes", "bytes",
     "The tree's PSS of a followed data file: each present page divided among the tree's "
     "processes that have it (pagemap)."},
    {"loaderlens_file_cached_bytes", "bytes",
     "A followed data file's pages in the page cache (cachestat, or mincore)."},
    {"loaderlens_epoch", "",
     "The number of the latest epoch (from epoch markers, else from worker generations)."},
    {"loaderlens_finding", "",
     "Findings of the diagnosis by kind and severity: how many (docs/findings.md)."},
}};

std::string meta_value(const std::map<std::string, std::string>& meta, const char* key) {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
}

} // namespace

const FamilySpec& spec(Family family) {
    return specs[static_cast<std::size_t>(family)];
}

Labels recording_labels(const std::map<std::string, std::string>& meta) {
    return {{"node", meta_value(meta, "host")},
            {"slurm_job", meta_value(meta, "slurm_job_id")},
            {"slurm_step", meta_value(meta, "slurm_step_id")},
            {"slurm_task", meta_value(meta, "slurm_procid")}};
}

Labels with(Labels base, std::initializer_list<std::pair<std::string, std::string>> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
}

Labels process_labels(const Labels& base, Role role, int slot) {
    return with(base, {{"role", to_string(role)}, {"slot", slot >= 0 ? std::to_string(slot) : ""}});
}

std::optional<std::string> bytes(const Kib& kib) {
    if (!kib) return std::nullopt;
    return std::to_string(saturating_mul(*kib, 1024));
}

std::string seconds(std::int64_t unix_ms) {
    if (unix_ms < 0) unix_ms = 0; // a damaged time: no sign in this format
    const std::string fraction = std::to_string(unix_ms % 1000);
    return std::to_string(unix_ms / 1000) + "." + std::string(3 - fraction.size(), '0') + fraction;
}

std::optional<std::int64_t> start_unix_ms(const std::map<std::string, std::string>& meta) {
    const std::string text = meta_value(meta, "start_unix_ns");
    std::int64_t ns = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ns);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || ns <= 0)
        return std::nullopt;
    return ns / 1'000'000;
}

} // namespace loaderlens::metrics
