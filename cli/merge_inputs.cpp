// SPDX-License-Identifier: MIT
#include "merge_inputs.hpp"

#include "loaderlens/recording.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <sys/stat.h>
#include <tuple>

namespace loaderlens::cli {

namespace {

std::string value_of(const std::map<std::string, std::string>& meta, const char* key) {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
}

// What one input is, or why it cannot be merged (its RecordingPart is then not used).
struct Checked {
    RecordingPart part;
    std::string refusal, warning;
};

Checked check_one(const std::string& file) {
    Checked c;
    c.part.source = file;
    try {
        const Recording recording(file);
        if (!recording.parts().empty()) {
            c.refusal = file + ": a merged recording (" + std::to_string(recording.parts().size()) +
                        " parts): merge the recordings it was made of instead";
            return c;
        }
        const RecordingEnd end = recording.end();
        if (end.state == RecordingEnd::State::being_written) {
            c.refusal = file + ": still being written by loaderlens PID " +
                        std::to_string(end.writer_pid.value_or(0)) +
                        " on this host: merge it once its recording has finished";
            return c;
        }
        const auto start = recording.meta_number("start_unix_ns");
        if (!start) {
            c.refusal = file + ": no wall-clock start (meta start_unix_ns): it cannot be put on "
                               "the job's time axis";
            return c;
        }
        const auto meta = recording.all_meta();
        RecordingPart& p = c.part;
        p.host = value_of(meta, "host");
        p.job = value_of(meta, "slurm_job_id");
        p.step = value_of(meta, "slurm_step_id");
        p.task = value_of(meta, "slurm_procid");
        p.schema = recording.schema();
        p.start_unix_ns = *start;
        p.last_sample_ms = end.last_sample_ms;
        const bool finished = end.state == RecordingEnd::State::finished;
        p.duration_ms = std::max<std::int64_t>(finished ? end.end_ms.value_or(0) : 0,
                                               std::max<std::int64_t>(0, end.last_sample_ms));
        p.end_state = finished ? value_of(meta, "state") : "cut";
        if (!finished)
            c.warning =
                fmt::format("{}: cut (the recorder stopped without finishing; {}): merged "
                            "as it is",
                            file,
                            end.last_sample_ms < 0
                                ? "no sample recorded"
                                : fmt::format("last sample at {:.1f} s",
                                              static_cast<double>(end.last_sample_ms) / 1000.0));
        if (!recording.missing_wal().empty())
            c.warning += (c.warning.empty() ? "" : "; ") + recording.missing_wal() +
                         " is missing: the newest data of " + file + " may be in it";
    } catch (const RecordingError& e) {
        c.refusal = e.what(); // names the file already
    }
    return c;
}

std::string job_text(const std::string& job) {
    return job.empty() ? "no SLURM job id" : "SLURM job " + job;
}

} // namespace

void name_parts(std::vector<RecordingPart>& parts) {
    std::map<std::string, std::vector<RecordingPart*>> by_host;
    for (RecordingPart& p : parts)
        by_host[p.host.empty() ? "part" : p.host].push_back(&p);
    for (auto& [host, group] : by_host) {
        auto unique = [&group](auto name_of) {
            std::set<std::string> names;
            for (RecordingPart* p : group)
                if (!names.insert(name_of(*p)).second) return false;
            return true;
        };
        auto with_step = [&host](const RecordingPart& p) {
            return host + (p.step.empty() ? "" : ".step" + p.step);
        };
        auto with_task = [&](const RecordingPart& p) {
            return with_step(p) + (p.task.empty() ? "" : ".task" + p.task);
        };
        if (group.size() == 1) {
            group.front()->name = host;
        } else if (unique(with_step)) {
            for (RecordingPart* p : group)
                p->name = with_step(*p);
        } else if (unique(with_task)) {
            for (RecordingPart* p : group)
                p->name = with_task(*p);
        } else {
            for (std::size_t i = 0; i < group.size(); ++i) // in start order: parts are sorted
                group[i]->name = host + "." + std::to_string(i + 1);
        }
    }
}

MergeInputs check_merge_inputs(const std::vector<std::string>& files) {
    MergeInputs out;
    std::map<std::pair<dev_t, ino_t>, std::string> seen_files;
    using Identity = std::tuple<std::string, std::string, std::string, std::string, std::int64_t>;
    std::map<Identity, std::string> seen_runs;
    const RecordingPart* first = nullptr;
    std::vector<RecordingPart> accepted;
    accepted.reserve(files.size());
    for (const std::string& file : files) {
        struct stat st {};
        if (::stat(file.c_str(), &st) == 0) {
            auto [it, fresh] = seen_files.emplace(std::pair{st.st_dev, st.st_ino}, file);
            if (!fresh) {
                out.refusals.push_back(file + ": the same file as " + it->second +
                                       " (given twice): each recording is merged once");
                continue;
            }
        }
        Checked c = check_one(file);
        if (!c.refusal.empty()) {
            out.refusals.push_back(c.refusal);
            continue;
        }
        const RecordingPart& p = c.part;
        auto [run, fresh] =
            seen_runs.emplace(Identity{p.host, p.job, p.step, p.task, p.start_unix_ns}, file);
        if (!fresh) {
            out.refusals.push_back(fmt::format(
                "{}: a copy of {} (the same host {}, {}, step {}, task {} and start): each "
                "recording is merged once",
                file, run->second, p.host, job_text(p.job), p.step.empty() ? "-" : p.step,
                p.task.empty() ? "-" : p.task));
            continue;
        }
        if (first && p.job != first->job) {
            out.refusals.push_back(fmt::format("{}: {}, where {} has {}: a merge holds the "
                                               "recordings of one job",
                                               file, job_text(p.job), first->source,
                                               job_text(first->job)));
            continue;
        }
        if (!c.warning.empty()) out.warnings.push_back(c.warning);
        accepted.push_back(std::move(c.part));
        if (!first) first = &accepted.front();
    }
    std::stable_sort(accepted.begin(), accepted.end(),
                     [](const RecordingPart& a, const RecordingPart& b) {
                         return a.start_unix_ns < b.start_unix_ns;
                     });
    if (!accepted.empty()) {
        const std::int64_t earliest = accepted.front().start_unix_ns;
        for (RecordingPart& p : accepted)
            p.offset_ms = saturating_sub(p.start_unix_ns, earliest) / 1'000'000;
    }
    name_parts(accepted);
    out.parts = std::move(accepted);
    return out;
}

} // namespace loaderlens::cli
