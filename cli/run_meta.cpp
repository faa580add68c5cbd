// SPDX-License-Identifier: MIT
#include "run_meta.hpp"

#include "commands.hpp"
#include "loaderlens/exit_watcher.hpp"
#include "loaderlens/proc_text.hpp"
#include "output_name.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sys/utsname.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

void write_host_meta(Recorder& recorder, const RecordingClock& clock) {
    utsname uts{};
    uname(&uts);
    recorder.set_meta("tool_version", LOADERLENS_VERSION);
    recorder.set_meta("host", node_name());
    recorder.set_meta("kernel", uts.release);
    recorder.set_meta("page_size", std::to_string(sysconf(_SC_PAGESIZE)));
    recorder.set_meta("cpus_online", std::to_string(sysconf(_SC_NPROCESSORS_ONLN)));
    recorder.set_meta("start_unix_ns", std::to_string(clock.start_unix_ns()));
    recorder.set_meta("writer_pid", std::to_string(getpid()));
}

void write_slurm_meta(Recorder& recorder) {
    for (const char* name : slurm_variables()) {
        const char* value = std::getenv(name);
        if (!value || !*value) continue;
        std::string key(name);
        std::transform(key.begin(), key.end(), key.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        recorder.set_meta(key, value);
    }
}

} // namespace

const std::vector<const char*>& slurm_variables() {
    // Ids that name the run (job, step, task, array), what SLURM granted (memory per node or per
    // CPU, in MiB; CPUs) and where it ran.
    static const std::vector<const char*> names{
        "SLURM_JOB_ID",
        "SLURM_STEP_ID",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "SLURM_NODEID",
        "SLURM_NTASKS",
        // Which tasks share this node and step (SLURM holds them to the step's limit together):
        // their global ids, and the step's task and node counts.
        "SLURM_GTIDS",
        "SLURM_STEP_NUM_TASKS",
        "SLURM_STEP_NUM_NODES",
        "SLURM_STEP_TASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE",
        "SLURM_ARRAY_JOB_ID",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_JOB_NAME",
        "SLURM_JOB_PARTITION",
        "SLURM_CLUSTER_NAME",
        "SLURM_MEM_PER_NODE",
        "SLURM_MEM_PER_CPU",
        "SLURM_MEM_PER_GPU",
        "SLURM_CPUS_ON_NODE",
        "SLURM_CPUS_PER_TASK",
        "SLURM_JOB_CPUS_PER_NODE",
        "SLURM_JOB_NODELIST",
        "SLURMD_NODENAME",
        "SLURM_CONF",
    };
    return names;
}

void write_run_meta(Recorder& recorder, const RecordingClock& clock,
                    const SessionOptions& session_options, const RecordOptions& o) {
    write_host_meta(recorder, clock);
    write_slurm_meta(recorder);
    // The -o pattern before %j %s %t %N %p were expanded: a report finds the recordings of the
    // step's other tasks by it.
    recorder.set_meta("output_pattern", o.output.empty() ? default_output_pattern() : o.output);
    recorder.set_meta("cpu_budget", std::to_string(session_options.cpu_budget));
    recorder.set_meta("pss_max_age_ms", std::to_string(session_options.pss_max_age_ms));
    recorder.set_meta("interval_fast_ms", std::to_string(session_options.fast_ms));
    recorder.set_meta("interval_rollup_ms", std::to_string(session_options.rollup_ms));
    recorder.set_meta("interval_maps_ms", std::to_string(session_options.maps_ms));
    recorder.set_meta("interval_cgroup_ms", std::to_string(session_options.cgroup_ms));
    recorder.set_meta("interval_residency_ms", std::to_string(session_options.residency_ms));
    const ResidencyOptions& residency = session_options.residency;
    recorder.set_meta("residency_buckets", std::to_string(residency.buckets));
    recorder.set_meta("residency_min_size_bytes", std::to_string(residency.min_size_bytes));
    recorder.set_meta("residency_method", o.residency_method);
    if (o.worker_match) recorder.set_meta("worker_match", *o.worker_match);
    if (auto bytes = o.mem_limit.empty() ? std::nullopt : parse_size(o.mem_limit))
        recorder.set_meta("mem_limit_kb", std::to_string(*bytes / 1024));
    // How exit statuses of processes the recorder does not reap itself are known.
    recorder.set_meta("exit_status_source",
                      ExitWatcher::kernel_supports_pidfd_exit_info() ? "pidfd" : "zombie-or-wait");
}

void write_recorder_footprint(Recorder& recorder) {
    Kib peak_rss, anon, pss;
    if (auto status = read_text_file("/proc/self/status")) {
        const KbField fields[] = {{"VmHWM", &peak_rss}, {"RssAnon", &anon}};
        parse_kb_fields(*status, fields);
    }
    if (auto rollup = read_text_file("/proc/self/smaps_rollup")) {
        const KbField fields[] = {{"Pss", &pss}};
        parse_kb_fields(*rollup, fields);
    }
    for (const auto& [key, value] :
         {std::pair{"recorder_peak_rss_kb", peak_rss}, std::pair{"recorder_anon_kb", anon},
          std::pair{"recorder_pss_kb", pss}})
        if (value) recorder.set_meta(key, std::to_string(*value));
}

} // namespace loaderlens::cli
