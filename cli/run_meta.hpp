// SPDX-License-Identifier: MIT
// What a recording says about the run it records: host, kernel, settings, and the SLURM job,
// step and task it ran in (with the memory SLURM granted), as meta rows.
#pragma once

#include "loaderlens/clock.hpp"
#include "loaderlens/recorder.hpp"
#include "loaderlens/session.hpp"
#include "record_command.hpp"

namespace loaderlens::cli {

// The SLURM variables kept, each under its own name in lower case (slurm_job_id, ...).
const std::vector<const char*>& slurm_variables();

void write_run_meta(Recorder& recorder, const RecordingClock& clock,
                    const SessionOptions& session_options, const RecordOptions& options);

// The recorder's own size (it is a process of the SLURM step, counted with the job), written
// every second and as the run ends: recorder_peak_rss_kb (VmHWM), recorder_anon_kb (RssAnon),
// recorder_pss_kb (Pss).
void write_recorder_footprint(Recorder& recorder);

} // namespace loaderlens::cli
