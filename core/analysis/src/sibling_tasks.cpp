// SPDX-License-Identifier: MIT
#include "loaderlens/sibling_tasks.hpp"

#include "diagnosis_parts.hpp"
#include "loaderlens/name_pattern.hpp"
#include "loaderlens/report.hpp"

#include <filesystem>

namespace loaderlens {

namespace {

// Where the task ended on its own clock: its end, or its last sample when it was cut.
std::int64_t run_length(const Recording& recording) {
    const RecordingEnd end = recording.end();
    return std::max<std::int64_t>(end.end_ms.value_or(0),
                                  std::max<std::int64_t>(0, end.last_sample_ms));
}

} // namespace

void find_sibling_tasks(const Recording& recording, DiagnosisOptions& options) {
    const auto meta = recording.all_meta();
    const std::vector<std::string> ids = diagnosis::node_task_ids(meta);
    const std::string own = diagnosis::meta_text(meta, "slurm_procid");
    if (ids.size() < 2 || own.empty() || ids.size() > 256) return;
    const std::string pattern = diagnosis::meta_text(meta, "output_pattern");
    const std::string job = diagnosis::meta_text(meta, "slurm_job_id"),
                      step = diagnosis::meta_text(meta, "slurm_step_id");
    const std::string node = diagnosis::meta_text(meta, "slurmd_nodename").empty()
                                 ? diagnosis::meta_text(meta, "host")
                                 : diagnosis::meta_text(meta, "slurmd_nodename");
    auto missing = [&](const std::string& text) { options.siblings_missing.push_back(text); };
    if (pattern.empty() || pattern.find("%p") != std::string::npos ||
        pattern.find("%t") == std::string::npos) {
        missing(pattern.empty() ? "the other tasks' names: this recording does not keep its -o "
                                  "pattern (recorded before loaderlens 0.28)"
                                : "the other tasks' names: the -o pattern " + pattern +
                                      (pattern.find("%t") == std::string::npos
                                           ? " has no %t"
                                           : " has %p, a process id only known to each task"));
        return;
    }
    const std::filesystem::path directory = std::filesystem::path(recording.path()).parent_path();
    const auto own_start = recording.meta_number("start_unix_ns");
    for (const std::string& id : ids) {
        if (id == own) continue;
        const std::string expanded =
            expand_name_pattern(pattern, [&](char key) -> std::optional<std::string> {
                switch (key) {
                case 'j':
                    return job;
                case 's':
                    return step;
                case 't':
                    return id;
                case 'a':
                    return diagnosis::meta_text(meta, "slurm_array_task_id").empty()
                               ? "noarray"
                               : diagnosis::meta_text(meta, "slurm_array_task_id");
                case 'N':
                    return node;
                }
                return std::nullopt;
            });
        // The name in this recording's directory: the task's cwd (where a relative -o went) is
        // not known, and the tasks' files are kept together.
        const std::string name = (directory / std::filesystem::path(expanded).filename()).string();
        std::error_code error;
        if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(name, error))) {
            missing(name + ": no such recording beside this one (task " + id + ")");
            continue;
        }
        try {
            Recording sibling(name);
            const auto other = sibling.all_meta();
            if (diagnosis::meta_text(other, "slurm_job_id") != job ||
                diagnosis::meta_text(other, "slurm_step_id") != step ||
                diagnosis::meta_text(other, "slurm_procid") != id) {
                missing(name + ": not task " + id + " of step " + job + "." + step);
                continue;
            }
            const auto start = sibling.meta_number("start_unix_ns");
            TaskOnNode task;
            task.path = name;
            task.task = id;
            if (own_start && start) task.offset_ms = (*start - *own_start) / 1'000'000;
            task.duration_ms = run_length(sibling);
            task.cut = sibling.end().state == RecordingEnd::State::cut;
            task.views = task_views(sibling.read_all());
            options.siblings.push_back(std::move(task));
        } catch (const RecordingError& e) {
            missing(e.what());
        }
    }
}

} // namespace loaderlens
